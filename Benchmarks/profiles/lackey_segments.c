// lackey_segments.c: reads valgrind lackey's `--trace-mem=yes` output on standard input and
// keeps only what runs between the marks of mark_wake_and_line.c: from a load of the wake-up
// mark to the next load of the line mark. Writes "WAKE", then one "KIND HEX-ADDRESS" line per
// access (I instruction, L load, S store, M modify), then "LINE", for each such segment; a
// wake-up that ends without a line (a message that changed no answer) is dropped at the next
// wake-up. Prints the number of segments on standard error.
#include <stdio.h>
#include <stdlib.h>

#include "wake_and_line_marks.h"

int main(void) {
    char row[256];
    int inside = 0;
    long segments = 0;
    while (fgets(row, sizeof row, stdin)) {
        char kind;
        // Lackey writes "I  ADDR,SIZE" for an instruction and " K ADDR,SIZE" for data.
        if (row[0] == 'I') kind = 'I';
        else if (row[0] == ' ' && (row[1] == 'L' || row[1] == 'S' || row[1] == 'M')) kind = row[1];
        else continue;
        unsigned long address = strtoul(row + 3, NULL, 16);
        if (kind != 'I' && address == WAKE_MARK) {
            inside = 1;
            puts("WAKE");
        } else if (kind != 'I' && address == LINE_MARK) {
            if (inside) {
                puts("LINE");
                segments++;
            }
            inside = 0;
        } else if (inside) {
            printf("%c %lx\n", kind, address);
        }
    }
    fprintf(stderr, "%ld segments from a wake-up to a line\n", segments);
    return 0;
}
