// An LD_PRELOAD library that makes a store's commit log (`commits.log`) fail the way a failing
// disk does, for the tests of what a writer does then. FEEDSTORE_FAULT names the fault:
//   "sync:N"   the Nth fsync or fdatasync of the log fails with EIO; the others succeed
//   "write:N"  the Nth write to the log fails with EIO, and every write after it
// Calls on other files, and the log's calls before the fault, go to the C library unchanged.
// Each failure is noted on standard error ("feedstore-fault: ..."), so a test can tell it came.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
// Descriptors open on the log (a store opens it once, a reader perhaps again).
static int logDescriptors[64];
static int logCount;
static long syncs, writes;

static int isLog(const char *path) {
    size_t n = strlen(path), m = strlen("commits.log");
    return n >= m && strcmp(path + n - m, "commits.log") == 0;
}

static int tracked(int fd) {
    for (int i = 0; i < logCount; i++) if (logDescriptors[i] == fd) return 1;
    return 0;
}

static void track(int fd, const char *path) {
    if (fd < 0 || !isLog(path)) return;
    pthread_mutex_lock(&lock);
    if (logCount < 64) logDescriptors[logCount++] = fd;
    pthread_mutex_unlock(&lock);
}

// Whether this call on `fd` is the one that fails ("sync" or "write").
static int fails(int fd, const char *kind) {
    const char *fault = getenv("FEEDSTORE_FAULT");
    if (!fault || strncmp(fault, kind, strlen(kind)) != 0 || fault[strlen(kind)] != ':') return 0;
    long n = atol(fault + strlen(kind) + 1);
    pthread_mutex_lock(&lock);
    int result = 0;
    if (tracked(fd)) {
        long count = strcmp(kind, "sync") == 0 ? ++syncs : ++writes;
        result = strcmp(kind, "sync") == 0 ? count == n : count >= n;
    }
    pthread_mutex_unlock(&lock);
    if (result) {
        static const char note[] = "feedstore-fault: a call on commits.log fails\n";
        (void)write(2, note, sizeof note - 1);
    }
    return result;
}

// Opens through the C library's `name` ("open" or "open64"), noting a descriptor on the log.
static int openTracked(const char *name, const char *path, int flags, mode_t mode) {
    int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, name);
    int fd = real(path, flags, mode);
    track(fd, path);
    return fd;
}

#define MODE_ARGUMENT(flags) \
    mode_t mode = 0; \
    if (flags & (O_CREAT | O_TMPFILE)) { va_list args; va_start(args, flags); mode = va_arg(args, mode_t); va_end(args); }

int open(const char *path, int flags, ...) {
    MODE_ARGUMENT(flags)
    return openTracked("open", path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    MODE_ARGUMENT(flags)
    return openTracked("open64", path, flags, mode);
}

int close(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "close");
    pthread_mutex_lock(&lock);
    for (int i = 0; i < logCount; i++) {
        if (logDescriptors[i] == fd) { logDescriptors[i] = logDescriptors[--logCount]; break; }
    }
    pthread_mutex_unlock(&lock);
    return real(fd);
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwrite");
    if (fails(fd, "write")) { errno = EIO; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwrite64");
    if (fails(fd, "write")) { errno = EIO; return -1; }
    return real(fd, buffer, count, offset);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
    if (fails(fd, "sync")) { errno = EIO; return -1; }
    return real(fd);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fsync");
    if (fails(fd, "sync")) { errno = EIO; return -1; }
    return real(fd);
}
