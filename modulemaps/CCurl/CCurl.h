// CCurl: libcurl's declarations (Debian's libcurl4-openssl-dev) for the connectivity probe, with
// the library itself opened at run time (`dlopen("libcurl.so.4")`) on the first probe: linked
// in, libcurl and the 32 libraries it needs would be loaded at every start of `reach`, probe
// or not (BENCHMARKS.md). Only the `ReachabilityConnectivity` module imports it.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>
#include <dlfcn.h>
#include <stddef.h>

/// The libcurl functions the probe calls, found in the library opened by `ccurl_load`.
typedef struct ccurl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *handle);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
    CURLU *(*url)(void);
    void (*url_cleanup)(CURLU *url);
    CURLUcode (*url_set)(CURLU *url, CURLUPart part, const char *content, unsigned int flags);
    CURLUcode (*url_get)(CURLU *url, CURLUPart part, char **content, unsigned int flags);
    const char *(*url_strerror)(CURLUcode code);
    void (*free)(void *pointer);
} ccurl_api;

/// Opens `library` (such as "libcurl.so.4") and fills `api`; 0 on success, else -1 with
/// `dlerror()`'s text in `*failure` and the library closed again. On success it stays loaded
/// for the life of the process. `url_strerror` (libcurl 7.80) may be NULL.
static inline int ccurl_load(const char *library, ccurl_api *api, const char **failure) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) { *failure = dlerror(); return -1; }
#define CCURL_FIND(field, symbol) \
    if ((*(void **)&api->field = dlsym(handle, symbol)) == NULL) { *failure = dlerror(); dlclose(handle); return -1; }
    CCURL_FIND(global_init, "curl_global_init")
    CCURL_FIND(easy_init, "curl_easy_init")
    CCURL_FIND(easy_cleanup, "curl_easy_cleanup")
    CCURL_FIND(easy_setopt, "curl_easy_setopt")
    CCURL_FIND(easy_perform, "curl_easy_perform")
    CCURL_FIND(easy_getinfo, "curl_easy_getinfo")
    CCURL_FIND(easy_strerror, "curl_easy_strerror")
    CCURL_FIND(slist_append, "curl_slist_append")
    CCURL_FIND(slist_free_all, "curl_slist_free_all")
    CCURL_FIND(url, "curl_url")
    CCURL_FIND(url_cleanup, "curl_url_cleanup")
    CCURL_FIND(url_set, "curl_url_set")
    CCURL_FIND(url_get, "curl_url_get")
    CCURL_FIND(free, "curl_free")
#undef CCURL_FIND
    *(void **)&api->url_strerror = dlsym(handle, "curl_url_strerror");
    return 0;
}

// curl_easy_setopt and curl_easy_getinfo take their value through C's `...`, which Swift does
// not call: one typed wrapper per kind of value.

static inline CURLcode ccurl_setopt_long(const ccurl_api *api, CURL *handle, CURLoption option, long value) {
    return api->easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_setopt_pointer(const ccurl_api *api, CURL *handle, CURLoption option, const void *value) {
    return api->easy_setopt(handle, option, value);
}

/// The function that gets the body, as `CURLOPT_WRITEFUNCTION` expects it.
typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode ccurl_setopt_write_callback(const ccurl_api *api, CURL *handle, ccurl_write_callback callback) {
    return api->easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode ccurl_getinfo_long(const ccurl_api *api, CURL *handle, CURLINFO info, long *value) {
    return api->easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_getinfo_string(const ccurl_api *api, CURL *handle, CURLINFO info, char **value) {
    return api->easy_getinfo(handle, info, value);
}

#endif
