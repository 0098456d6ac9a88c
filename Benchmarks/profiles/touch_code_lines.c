// touch_code_lines: an LD_PRELOAD library for the cold-code experiment of
// cold_code_lines.sh. Not part of the library or of any build of it.
//
// At load it reads $TOUCH_CODE_LINES, a file of "OBJECT-PATH HEX-OFFSET" lines (the offset of a
// 64-byte code line in that object, as callgrind's --dump-instr=yes prints it), and finds each
// object's load address with dl_iterate_phdr (the main program by its name). Then, every time
// epoll_wait(2) returns events (the subscription thread waking up for a kernel message), it
// reads one byte of every listed line before returning: independent loads that the CPU
// overlaps, so the lines come back from memory in parallel, where the path itself would miss
// on them one after the other. With $TOUCH_STACK_BYTES it also reads that many bytes of the
// thread's stack below its own frame, a line at a time (the stack the path will run on). With
// neither it only forwards epoll_wait.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

enum { MAX_LINES = 16384 };

static char *objects[MAX_LINES];
static unsigned long offsets[MAX_LINES];
static int listed;
static const volatile unsigned char *lines[MAX_LINES];
static int resolved = -1;
static volatile unsigned sink;
static long stack_bytes;

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

struct search { const char *object; unsigned long offset, base; int found; };

static int match_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct search *search = data;
    const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : program_invocation_name;
    if (strcmp(base_name(name), base_name(search->object)) != 0) return 0;
    // Only a line inside one of the object's loaded segments: a control list's shifted lines
    // may run past its end.
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type == PT_LOAD && search->offset >= segment->p_vaddr &&
            search->offset + 64 <= segment->p_vaddr + segment->p_memsz) {
            search->base = info->dlpi_addr;
            search->found = 1;
        }
    }
    return 1;
}

// Resolved at the first wake-up, when every library the listener uses is loaded.
static void resolve(void) {
    resolved = 0;
    for (int i = 0; i < listed; i++) {
        struct search search = {objects[i], offsets[i], 0, 0};
        dl_iterate_phdr(match_object, &search);
        if (search.found) lines[resolved++] = (const volatile unsigned char *)(search.base + offsets[i]);
    }
    if (resolved < listed) fprintf(stderr, "touch_code_lines: %d of %d lines in loaded objects\n", resolved, listed);
}

__attribute__((constructor)) static void load_list(void) {
    const char *stack = getenv("TOUCH_STACK_BYTES");
    if (stack) stack_bytes = atol(stack);
    const char *path = getenv("TOUCH_CODE_LINES");
    if (!path) return;
    FILE *file = fopen(path, "r");
    if (!file) {
        perror("touch_code_lines");
        return;
    }
    char object[1024];
    unsigned long offset;
    while (listed < MAX_LINES && fscanf(file, "%1023s %lx", object, &offset) == 2) {
        objects[listed] = strdup(object);
        offsets[listed++] = offset;
    }
    fclose(file);
}

int epoll_wait(int descriptor, struct epoll_event *events, int capacity, int timeout) {
    static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
    if (!real_epoll_wait) real_epoll_wait = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
    int count = real_epoll_wait(descriptor, events, capacity, timeout);
    if (count > 0 && (listed > 0 || stack_bytes > 0)) {
        int saved = errno;
        if (resolved < 0) resolve();
        unsigned sum = 0;
        for (int i = 0; i < resolved; i++) sum += *lines[i];
        // The stack the path will run on: the lines below this frame, in the thread's stack.
        uintptr_t top = (uintptr_t)__builtin_frame_address(0);
        for (long offset = 64; offset <= stack_bytes; offset += 64)
            sum += *(const volatile unsigned char *)(top - (uintptr_t)offset);
        sink = sum;
        errno = saved;
    }
    return count;
}
