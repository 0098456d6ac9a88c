// CAres: c-ares, the asynchronous DNS resolver (Debian's libc-ares-dev), for name lookups that
// must use a resolver configuration other than the process's /etc/resolv.conf: a named network
// namespace's /etc/netns/NAME/resolv.conf. Only the `Reachability` module imports it.
#ifndef CARES_SHIM_H
#define CARES_SHIM_H

#include <ares.h>

#endif
