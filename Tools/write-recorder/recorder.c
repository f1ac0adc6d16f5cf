// An LD_PRELOAD library that records, in order, what a process writes to LMDB data files
// (`data.mdb`) and when it syncs them, plus what it prints on standard output, into the log file
// named by FEEDSTORE_WRITE_LOG. The power-loss checker replays the log to build the file states
// a power loss could leave. The process behaves as it would without it: every call goes to the
// C library, and is only noted after.
//
// Data files are `data.mdb`, `data.mdb.partial` (a copy being written) and `commits.log` (a
// store's commit log).
// Log records: u8 kind, u64 offset, u64 length, then `length` bytes.
//   1 write (offset, the bytes written)   2 sync (a completed fsync/fdatasync, or a write on a
//   descriptor opened with O_DSYNC/O_SYNC)   3 truncate (length = new size)   4 output (fd 1 bytes)
//   5 rename (the old and new paths, each ending in a zero byte)   6 directory sync (its path)
//   7 file (its path): the data file that the writes, syncs and truncates after it are on; noted
//     when it changes
//   8 unmodelled (the call's name): an fallocate or posix_fallocate on a data file, or any msync.
//     Feedstore's writers make none (LMDB extends files by writing, and Feedstore does not map
//     them writable); the checker refuses a log that holds one rather than model it wrongly.
//   9 directory made (its path): a mkdir that succeeded; its entry in its parent is durable once
//     the parent is synced
//  10 file made (its path): an open that created a data file; its entry in its directory is
//     durable once the directory is synced
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum { KIND_WRITE = 1, KIND_SYNC = 2, KIND_TRUNCATE = 3, KIND_OUTPUT = 4, KIND_RENAME = 5, KIND_DIRECTORY_SYNC = 6, KIND_FILE = 7, KIND_UNMODELLED = 8,
       KIND_DIRECTORY_MADE = 9, KIND_FILE_MADE = 10 };
enum { MAX_FD = 4096 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static unsigned char tracked[MAX_FD];  // 1: a data file, 2: one opened with O_DSYNC or O_SYNC
static char *directories[MAX_FD];      // the path of each descriptor opened on a directory
static char *files[MAX_FD];            // the path of each descriptor opened on a data file
static char *noted_file;               // the data file of the last noted write, sync or truncate

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_rename)(const char *, const char *);
static off_t (*real_lseek)(int, off_t, int);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_posix_fallocate)(int, off_t, off_t);
static int (*real_msync)(void *, size_t, int);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);

static void resolve(void) {
    if (real_write) return;
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pwritev = dlsym(RTLD_NEXT, "pwritev");
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_close = dlsym(RTLD_NEXT, "close");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_lseek = dlsym(RTLD_NEXT, "lseek");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_fallocate = dlsym(RTLD_NEXT, "fallocate");
    real_posix_fallocate = dlsym(RTLD_NEXT, "posix_fallocate");
    real_msync = dlsym(RTLD_NEXT, "msync");
    real_mkdir = dlsym(RTLD_NEXT, "mkdir");
    real_mkdirat = dlsym(RTLD_NEXT, "mkdirat");
    real_write = dlsym(RTLD_NEXT, "write");
}

__attribute__((constructor)) static void start(void) {
    resolve();
    const char *path = getenv("FEEDSTORE_WRITE_LOG");
    if (path) log_fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

// Appends one record; the caller holds `lock`.
static void note(unsigned char kind, uint64_t offset, const void *bytes, uint64_t length) {
    if (log_fd < 0) return;
    unsigned char header[17];
    header[0] = kind;
    memcpy(header + 1, &offset, 8);
    memcpy(header + 9, &length, 8);
    real_write(log_fd, header, sizeof header);
    const char *p = bytes;
    uint64_t left = bytes ? length : 0;
    while (left > 0) {
        ssize_t n = real_write(log_fd, p, left);
        if (n <= 0) break;
        p += n;
        left -= (uint64_t)n;
    }
}

// Notes that the next operation is on `fd`'s data file, when it is not the last one noted's.
static void on_file(int fd) {
    const char *path = files[fd] ? files[fd] : "";
    if (noted_file && strcmp(noted_file, path) == 0) return;
    free(noted_file);
    noted_file = strdup(path);
    note(KIND_FILE, 0, path, strlen(path));
}

static int ends_with(const char *path, const char *suffix) {
    size_t n = strlen(path), m = strlen(suffix);
    return n >= m && strcmp(path + n - m, suffix) == 0;
}

static int is_data_file(const char *path) {
    return ends_with(path, "data.mdb") || ends_with(path, "data.mdb.partial") || ends_with(path, "commits.log");
}

static void opened(int fd, const char *path, int flags) {
    if (fd < 0 || fd >= MAX_FD) return;
    pthread_mutex_lock(&lock);
    tracked[fd] = is_data_file(path) ? ((flags & (O_DSYNC | O_SYNC)) ? 2 : 1) : 0;
    free(files[fd]);
    files[fd] = tracked[fd] ? strdup(path) : NULL;
    free(directories[fd]);
    directories[fd] = (flags & O_DIRECTORY) ? strdup(path) : NULL;
    pthread_mutex_unlock(&lock);
}

static int is_tracked(int fd) { return fd >= 0 && fd < MAX_FD && tracked[fd]; }

// Whether an open of `path` with `flags` may create a data file that is not there yet.
static int creates_data_file(const char *path, int flags) {
    return (flags & O_CREAT) && is_data_file(path) && access(path, F_OK) != 0;
}

// A path that a call made: noted with its kind.
static void made(int kind, const char *path) {
    pthread_mutex_lock(&lock);
    note(kind, 0, path, strlen(path));
    pthread_mutex_unlock(&lock);
}

// A write of `n` bytes at `offset` went through: note it, and a sync for a synchronous descriptor.
static void wrote(int fd, const void *bytes, ssize_t n, off_t offset) {
    if (n <= 0) return;
    on_file(fd);
    note(KIND_WRITE, (uint64_t)offset, bytes, (uint64_t)n);
    if (tracked[fd] == 2) note(KIND_SYNC, 0, NULL, 0);
}

int open(const char *path, int flags, ...) {
    resolve();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list a; va_start(a, flags); mode = va_arg(a, mode_t); va_end(a); }
    int creating = creates_data_file(path, flags);
    int fd = real_open(path, flags, mode);
    if (fd >= 0 && creating) made(KIND_FILE_MADE, path);
    opened(fd, path, flags);
    return fd;
}

int open64(const char *path, int flags, ...) {
    resolve();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list a; va_start(a, flags); mode = va_arg(a, mode_t); va_end(a); }
    int creating = creates_data_file(path, flags);
    int fd = real_open64 ? real_open64(path, flags, mode) : real_open(path, flags, mode);
    if (fd >= 0 && creating) made(KIND_FILE_MADE, path);
    opened(fd, path, flags);
    return fd;
}

int openat(int dir, const char *path, int flags, ...) {
    resolve();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list a; va_start(a, flags); mode = va_arg(a, mode_t); va_end(a); }
    int creating = creates_data_file(path, flags);
    int fd = real_openat(dir, path, flags, mode);
    if (fd >= 0 && creating) made(KIND_FILE_MADE, path);
    opened(fd, path, flags);
    return fd;
}

int close(int fd) {
    resolve();
    pthread_mutex_lock(&lock);
    if (fd >= 0 && fd < MAX_FD) {
        tracked[fd] = 0;
        free(files[fd]);
        files[fd] = NULL;
        free(directories[fd]);
        directories[fd] = NULL;
    }
    int result = real_close(fd);
    pthread_mutex_unlock(&lock);
    return result;
}

ssize_t pwrite(int fd, const void *bytes, size_t count, off_t offset) {
    resolve();
    if (!is_tracked(fd)) return real_pwrite(fd, bytes, count, offset);
    pthread_mutex_lock(&lock);
    ssize_t n = real_pwrite(fd, bytes, count, offset);
    wrote(fd, bytes, n, offset);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t pwrite64(int fd, const void *bytes, size_t count, off_t offset) {
    resolve();
    if (!is_tracked(fd)) return (real_pwrite64 ? real_pwrite64 : real_pwrite)(fd, bytes, count, offset);
    pthread_mutex_lock(&lock);
    ssize_t n = (real_pwrite64 ? real_pwrite64 : real_pwrite)(fd, bytes, count, offset);
    wrote(fd, bytes, n, offset);
    pthread_mutex_unlock(&lock);
    return n;
}

// Notes the pieces of a vectored write that went through, from `offset` on.
static void wrote_vector(int fd, const struct iovec *iov, int count, ssize_t n, off_t offset) {
    if (n > 0) on_file(fd);
    for (int i = 0; i < count && n > 0; i++) {
        ssize_t part = (ssize_t)iov[i].iov_len < n ? (ssize_t)iov[i].iov_len : n;
        note(KIND_WRITE, (uint64_t)offset, iov[i].iov_base, (uint64_t)part);
        offset += part;
        n -= part;
    }
}

ssize_t writev(int fd, const struct iovec *iov, int count) {
    resolve();
    if (!is_tracked(fd)) return real_writev(fd, iov, count);
    pthread_mutex_lock(&lock);
    off_t offset = real_lseek(fd, 0, SEEK_CUR);
    ssize_t n = real_writev(fd, iov, count);
    wrote_vector(fd, iov, count, n, offset);
    if (n > 0 && tracked[fd] == 2) note(KIND_SYNC, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t pwritev(int fd, const struct iovec *iov, int count, off_t offset) {
    resolve();
    if (!is_tracked(fd)) return real_pwritev(fd, iov, count, offset);
    pthread_mutex_lock(&lock);
    ssize_t n = real_pwritev(fd, iov, count, offset);
    wrote_vector(fd, iov, count, n, offset);
    if (n > 0 && tracked[fd] == 2) note(KIND_SYNC, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t write(int fd, const void *bytes, size_t count) {
    resolve();
    if (fd == 1) {
        // Output: what the process acknowledged, in order with its file writes.
        pthread_mutex_lock(&lock);
        ssize_t n = real_write(fd, bytes, count);
        if (n > 0) note(KIND_OUTPUT, 0, bytes, (uint64_t)n);
        pthread_mutex_unlock(&lock);
        return n;
    }
    if (!is_tracked(fd)) return real_write(fd, bytes, count);
    pthread_mutex_lock(&lock);
    off_t offset = real_lseek(fd, 0, SEEK_CUR);
    ssize_t n = real_write(fd, bytes, count);
    wrote(fd, bytes, n, offset);
    pthread_mutex_unlock(&lock);
    return n;
}

// Syncs under the lock, so that no write is noted between the sync and its record.
static int synced(int fd, int (*sync)(int)) {
    int directory = fd >= 0 && fd < MAX_FD && directories[fd];
    if (!is_tracked(fd) && !directory) return sync(fd);
    pthread_mutex_lock(&lock);
    int result = sync(fd);
    if (result == 0 && directory) note(KIND_DIRECTORY_SYNC, 0, directories[fd], strlen(directories[fd]));
    else if (result == 0) {
        on_file(fd);
        note(KIND_SYNC, 0, NULL, 0);
    }
    pthread_mutex_unlock(&lock);
    return result;
}

int fsync(int fd) { resolve(); return synced(fd, real_fsync); }

int fdatasync(int fd) { resolve(); return synced(fd, real_fdatasync); }

int ftruncate(int fd, off_t length) {
    resolve();
    if (!is_tracked(fd)) return real_ftruncate(fd, length);
    pthread_mutex_lock(&lock);
    int result = real_ftruncate(fd, length);
    if (result == 0) {
        on_file(fd);
        note(KIND_TRUNCATE, (uint64_t)length, NULL, 0);
    }
    pthread_mutex_unlock(&lock);
    return result;
}

int rename(const char *from, const char *to) {
    resolve();
    if (!is_data_file(from) && !is_data_file(to)) return real_rename(from, to);
    pthread_mutex_lock(&lock);
    int result = real_rename(from, to);
    if (result == 0) {
        size_t a = strlen(from) + 1, b = strlen(to) + 1;
        char *both = malloc(a + b);
        if (both) {
            memcpy(both, from, a);
            memcpy(both + a, to, b);
            note(KIND_RENAME, 0, both, a + b);
            free(both);
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}

// Calls the checker does not model: noted, so that a log holding one is refused.
static void unmodelled(const char *name) {
    pthread_mutex_lock(&lock);
    note(KIND_UNMODELLED, 0, name, strlen(name));
    pthread_mutex_unlock(&lock);
}

int fallocate(int fd, int mode, off_t offset, off_t length) {
    resolve();
    if (is_tracked(fd)) unmodelled("fallocate");
    return real_fallocate(fd, mode, offset, length);
}

int posix_fallocate(int fd, off_t offset, off_t length) {
    resolve();
    if (is_tracked(fd)) unmodelled("posix_fallocate");
    return real_posix_fallocate(fd, offset, length);
}

int msync(void *address, size_t length, int flags) {
    resolve();
    unmodelled("msync");
    return real_msync(address, length, flags);
}

int mkdir(const char *path, mode_t mode) {
    resolve();
    int result = real_mkdir(path, mode);
    if (result == 0) made(KIND_DIRECTORY_MADE, path);
    return result;
}

int mkdirat(int dir, const char *path, mode_t mode) {
    resolve();
    int result = real_mkdirat(dir, path, mode);
    // Paths relative to another directory are not followed; Feedstore makes absolute ones.
    if (result == 0 && path[0] == '/') made(KIND_DIRECTORY_MADE, path);
    return result;
}
