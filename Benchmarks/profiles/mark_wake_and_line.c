// mark_wake_and_line.c: an LD_PRELOAD library for valgrind's lackey (`--trace-mem=yes`) that
// marks, in the memory trace, where a listener's path starts and ends, for lackey_segments.c.
//
// When epoll_wait(2) returns events (the subscription thread waking up for a kernel message)
// it loads a byte of a page mapped at a fixed address (WAKE_MARK, in wake_and_line_marks.h); when the program
// writes to its standard output (the line for the event) it loads a byte 128 bytes further on
// (LINE_MARK). Each load feeds a volatile store, so valgrind's code generator cannot drop it.
// At the first wake-up it writes to $MARKER_BASES every loaded object's PT_LOAD segments
// ("OBJECT LOAD-BIAS VADDR MEMSZ", the addresses of its code and static data) and the waking
// thread's stack ("stack LOW HIGH"), so that lackey_data_lines.py can tell each address's place.
// It also prints READY before the program's first line (its first answer: it has subscribed),
// for flip_latency's `-s`, since a program under lackey takes half a minute to get there.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wake_and_line_marks.h"

static const volatile unsigned char *wake_mark, *line_mark;
static volatile unsigned sink;
static int bases_written, ready_written;

__attribute__((constructor)) static void map_marks(void) {
    void *page = mmap((void *)WAKE_MARK, 4096, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (page != (void *)WAKE_MARK) {
        fprintf(stderr, "mark_wake_and_line: cannot map the marks at %#lx\n", WAKE_MARK);
        exit(1);
    }
    wake_mark = (const volatile unsigned char *)WAKE_MARK;
    line_mark = (const volatile unsigned char *)LINE_MARK;
}

static int write_segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    FILE *file = data;
    const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : program_invocation_name;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type == PT_LOAD)
            fprintf(file, "%s %#lx %#lx %#lx\n", name, (unsigned long)info->dlpi_addr,
                    (unsigned long)segment->p_vaddr, (unsigned long)segment->p_memsz);
    }
    return 0;
}

static void write_bases(void) {
    const char *path = getenv("MARKER_BASES");
    FILE *file = path ? fopen(path, "w") : NULL;
    if (!file) return;
    pthread_attr_t attributes;
    void *stack;
    size_t stack_size;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
        if (pthread_attr_getstack(&attributes, &stack, &stack_size) == 0)
            fprintf(file, "stack %#lx %#lx\n", (unsigned long)stack, (unsigned long)stack + stack_size);
        pthread_attr_destroy(&attributes);
    }
    dl_iterate_phdr(write_segments, file);
    fclose(file);
}

int epoll_wait(int descriptor, struct epoll_event *events, int capacity, int timeout) {
    static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
    if (!real_epoll_wait) real_epoll_wait = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
    int count = real_epoll_wait(descriptor, events, capacity, timeout);
    if (count > 0) {
        int saved = errno;
        if (!bases_written) {
            write_bases();
            bases_written = 1;
        }
        sink = *wake_mark;
        errno = saved;
    }
    return count;
}

ssize_t write(int descriptor, const void *buffer, size_t length) {
    static ssize_t (*real_write)(int, const void *, size_t);
    if (!real_write) real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (descriptor == 1) {
        if (!ready_written) {
            ready_written = 1;
            real_write(1, "READY\n", 6);
        }
        sink = *line_mark;
    }
    return real_write(descriptor, buffer, length);
}
