// An LD_PRELOAD library that makes a store's files (its commit log `commits.log`, LMDB's
// `data.mdb`) fail the way a failing disk does, for the tests of what a writer does then.
// FEEDSTORE_FAULT names the fault:
//   "sync:N"   the Nth fsync or fdatasync of the log fails with EIO; the others succeed
//   "write:N"  the Nth write to the log fails with EIO, and every write after it
//   "data-sync:N"  the Nth fsync or fdatasync of LMDB's data file (`data.mdb`) fails with EIO
//   "data-write:N"  the Nth write to LMDB's data file (`data.mdb`) fails with EIO; the others
//              succeed (a commit that fails after its record went to the log)
//   "page-write:N"  the same, counting only writes of pages, not of LMDB's two meta pages at the
//              file's start (a commit that fails before its meta page, leaving LMDB usable)
//   "meta-write:N"  the same, counting only writes of LMDB's meta pages (a failed meta page
//              write stops LMDB's environment until it is opened again)
//   "data-write:N+log:K" (or page-write, meta-write)  the same, and the K writes to the log
//              after it fail too (a disk that fails for a while: the failed commit's record
//              cannot be taken back at once)
//   "sync:N+data-sync"  the Nth sync of the log fails, and so does the next sync of LMDB's data
//              file (a commit that can be made durable neither in the log nor in LMDB's file)
// Calls on other files, and the calls before the fault, go to the C library unchanged.
// Each failure is noted on standard error ("feedstore-fault: ..."), so a test can tell it came.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
// Descriptors open on the log or the data file (a store opens each once, a reader perhaps
// again), each with what it is open on.
enum { LOG = 1, DATA = 2 };
static int descriptors[64], kinds[64];
static int count;
static long syncs, writes, dataSyncs, dataWrites;
// Writes to the log still to fail after the data file's ("+log:K").
static long failingLogWrites;
// Syncs of the data file still to fail after the log's ("+data-sync").
static long failingDataSyncs;

static int endsWith(const char *path, const char *name) {
    size_t n = strlen(path), m = strlen(name);
    return n >= m && strcmp(path + n - m, name) == 0;
}

// What `fd` is open on: LOG, DATA or 0.
static int kindOf(int fd) {
    for (int i = 0; i < count; i++) if (descriptors[i] == fd) return kinds[i];
    return 0;
}

static void track(int fd, const char *path) {
    int kind = endsWith(path, "commits.log") ? LOG : endsWith(path, "data.mdb") ? DATA : 0;
    if (fd < 0 || !kind) return;
    pthread_mutex_lock(&lock);
    if (count < 64) { descriptors[count] = fd; kinds[count++] = kind; }
    pthread_mutex_unlock(&lock);
}

// Notes a failure on standard error, for the tests to tell it came.
static void note(const char *what) {
    char line[96];
    int n = snprintf(line, sizeof line, "feedstore-fault: %s\n", what);
    (void)write(2, line, (size_t)n);
}

// Whether this call on `fd` is the one that fails ("sync", "write", "data-sync", "data-write",
// "page-write" or "meta-write"); a write goes to `offset`.
static int fails(int fd, const char *kind, off_t offset) {
    const char *fault = getenv("FEEDSTORE_FAULT");
    if (!fault || strncmp(fault, kind, strlen(kind)) != 0 || fault[strlen(kind)] != ':') return 0;
    long n = atol(fault + strlen(kind) + 1);
    int pages = strcmp(kind, "page-write") == 0, metas = strcmp(kind, "meta-write") == 0;
    int dataSync = strcmp(kind, "data-sync") == 0;
    int dataWrite = pages || metas || strcmp(kind, "data-write") == 0;
    // LMDB's meta pages are the file's first two 4 KiB pages.
    int counted = pages ? offset >= 2 * 4096 : metas ? offset < 2 * 4096 : 1;
    pthread_mutex_lock(&lock);
    int result = 0;
    if (kindOf(fd) == (dataWrite || dataSync ? DATA : LOG)) {
        if (dataWrite) {
            result = counted && ++dataWrites == n;
            const char *more = strstr(fault, "+log:");
            if (result && more) failingLogWrites = atol(more + 5);
        }
        else if (dataSync) result = ++dataSyncs == n;
        else if (strcmp(kind, "sync") == 0) {
            result = ++syncs == n;
            if (result && strstr(fault, "+data-sync")) failingDataSyncs = 1;
        }
        else result = ++writes >= n;
    }
    pthread_mutex_unlock(&lock);
    if (result) note(dataWrite ? "a write to data.mdb fails" : dataSync ? "a sync of data.mdb fails" : "a call on commits.log fails");
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
    for (int i = 0; i < count; i++) {
        if (descriptors[i] == fd) { count--; descriptors[i] = descriptors[count]; kinds[i] = kinds[count]; break; }
    }
    pthread_mutex_unlock(&lock);
    return real(fd);
}

// Whether this call on `fd` is one of the `*remaining` that fail after another fault, on a file
// of `kind` ("+log:K" after a data file's write, "+data-sync" after a log's sync): noted as `what`.
static int failsAfter(int fd, long *remaining, int kind, const char *what) {
    pthread_mutex_lock(&lock);
    int result = *remaining > 0 && kindOf(fd) == kind;
    if (result) (*remaining)--;
    pthread_mutex_unlock(&lock);
    if (result) note(what);
    return result;
}

// Whether this write on `fd` at `offset` fails: to the log ("write", "+log:K") or to the data
// file ("data-write", "page-write", "meta-write").
static int writeFails(int fd, off_t offset) {
    return fails(fd, "write", offset) || fails(fd, "data-write", offset) || fails(fd, "page-write", offset)
        || fails(fd, "meta-write", offset) || failsAfter(fd, &failingLogWrites, LOG, "a call on commits.log fails");
}

// Whether this sync of `fd` fails: of the log ("sync") or of the data file ("data-sync",
// "+data-sync").
static int syncFails(int fd) {
    return fails(fd, "sync", 0) || fails(fd, "data-sync", 0) || failsAfter(fd, &failingDataSyncs, DATA, "a sync of data.mdb fails");
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwrite");
    if (writeFails(fd, offset)) { errno = EIO; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwrite64");
    if (writeFails(fd, offset)) { errno = EIO; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t pwritev(int fd, const struct iovec *vectors, int n, off_t offset) {
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwritev");
    if (writeFails(fd, offset)) { errno = EIO; return -1; }
    return real(fd, vectors, n, offset);
}

ssize_t pwritev64(int fd, const struct iovec *vectors, int n, off_t offset) {
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwritev64");
    if (writeFails(fd, offset)) { errno = EIO; return -1; }
    return real(fd, vectors, n, offset);
}

ssize_t writev(int fd, const struct iovec *vectors, int n) {
    static ssize_t (*real)(int, const struct iovec *, int);
    if (!real) real = dlsym(RTLD_NEXT, "writev");
    if (writeFails(fd, lseek(fd, 0, SEEK_CUR))) { errno = EIO; return -1; }
    return real(fd, vectors, n);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
    if (syncFails(fd)) { errno = EIO; return -1; }
    return real(fd);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fsync");
    if (syncFails(fd)) { errno = EIO; return -1; }
    return real(fd);
}
