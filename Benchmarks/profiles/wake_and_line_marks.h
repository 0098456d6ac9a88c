// The two addresses by which mark_wake_and_line.c marks a listener's path in a lackey memory
// trace and lackey_segments.c finds it again: a load of WAKE_MARK at the wake-up, a load of
// LINE_MARK at the line. One page is mapped there by the preload.
#ifndef WAKE_AND_LINE_MARKS_H
#define WAKE_AND_LINE_MARKS_H

#define WAKE_MARK 0x200000000UL
#define LINE_MARK (WAKE_MARK + 128)

#endif
