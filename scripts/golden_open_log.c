// An LD_PRELOAD library for scripts/check-goldens-required.sh: every file opened or looked up
// (stat: tests/golden.cpp refuses an empty golden by its size, before opening it) under a
// "/golden/" folder is logged to $GOLDEN_OPEN_LOG as "TEST<TAB>PATH", TEST being the
// --gtest_filter of this process (or of its parent: the attn binary a CLI test runs).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// open(2) itself: the reads below must not log themselves.
static int real_open(const char* path, int flags, mode_t mode) {
  int (*open_function)(const char*, int, ...) =
      (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
  return open_function(path, flags, mode);
}

// The --gtest_filter= argument of /proc/PID/cmdline, or "" (arguments are NUL-separated).
static void gtest_filter_of(const char* pid, char* filter, size_t size) {
  char path[64], args[65536];
  snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
  filter[0] = 0;
  int fd = real_open(path, O_RDONLY, 0);
  if (fd < 0) return;
  ssize_t n = read(fd, args, sizeof args - 1);
  close(fd);
  if (n <= 0) return;
  args[n] = 0;
  for (char* arg = args; arg < args + n; arg += strlen(arg) + 1) {
    if (strncmp(arg, "--gtest_filter=", 15) == 0) {
      snprintf(filter, size, "%s", arg + 15);
      return;
    }
  }
}

static void log_open(const char* file) {
  const char* log = getenv("GOLDEN_OPEN_LOG");
  if (!file || !log || !strstr(file, "/golden/")) return;
  char filter[4096], parent[32], line[8192];
  gtest_filter_of("self", filter, sizeof filter);
  if (!filter[0]) {
    snprintf(parent, sizeof parent, "%d", (int)getppid());
    gtest_filter_of(parent, filter, sizeof filter);
  }
  int length = snprintf(line, sizeof line, "%s\t%s\n", filter, file);
  int fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  if (write(fd, line, (size_t)length) < 0) { /* nothing to do: the log is best effort */
  }
  close(fd);
}

#define FORWARD_OPEN(name)                                        \
  int name(const char* file, int flags, ...) {                    \
    va_list args;                                                 \
    va_start(args, flags);                                        \
    mode_t mode = (mode_t)va_arg(args, int);                      \
    va_end(args);                                                 \
    log_open(file);                                               \
    int (*real)(const char*, int, ...) = dlsym(RTLD_NEXT, #name); \
    return real(file, flags, mode);                               \
  }
FORWARD_OPEN(open)
FORWARD_OPEN(open64)

#define FORWARD_OPENAT(name)                                           \
  int name(int dir, const char* file, int flags, ...) {                \
    va_list args;                                                      \
    va_start(args, flags);                                             \
    mode_t mode = (mode_t)va_arg(args, int);                           \
    va_end(args);                                                      \
    log_open(file);                                                    \
    int (*real)(int, const char*, int, ...) = dlsym(RTLD_NEXT, #name); \
    return real(dir, file, flags, mode);                               \
  }
FORWARD_OPENAT(openat)
FORWARD_OPENAT(openat64)

#define FORWARD_FOPEN(name)                                            \
  FILE* name(const char* file, const char* mode) {                     \
    log_open(file);                                                    \
    FILE* (*real)(const char*, const char*) = dlsym(RTLD_NEXT, #name); \
    return real(file, mode);                                           \
  }
FORWARD_FOPEN(fopen)
FORWARD_FOPEN(fopen64)

#define FORWARD_STAT(name, type)                               \
  int name(const char* file, type* buffer) {                   \
    log_open(file);                                            \
    int (*real)(const char*, type*) = dlsym(RTLD_NEXT, #name); \
    return real(file, buffer);                                 \
  }
FORWARD_STAT(stat, struct stat)
FORWARD_STAT(stat64, struct stat64)
FORWARD_STAT(lstat, struct stat)
FORWARD_STAT(lstat64, struct stat64)

#define FORWARD_STATAT(name, type)                                       \
  int name(int dir, const char* file, type* buffer, int flags) {         \
    log_open(file);                                                      \
    int (*real)(int, const char*, type*, int) = dlsym(RTLD_NEXT, #name); \
    return real(dir, file, buffer, flags);                               \
  }
FORWARD_STATAT(fstatat, struct stat)
FORWARD_STATAT(fstatat64, struct stat64)

int statx(int dir, const char* file, int flags, unsigned int mask, struct statx* buffer) {
  log_open(file);
  int (*real)(int, const char*, int, unsigned int, struct statx*) = dlsym(RTLD_NEXT, "statx");
  return real(dir, file, flags, mask, buffer);
}
