/* find_bytes: where a short byte string next occurs in a file (the C form of the search in
 * builder/metallib/embedded.py, which looks for every metallib's magic in a binary).
 *
 * find_bytes(fd, needle, start, end) -> int: the first offset o with start <= o and
 * o + len(needle) <= end at which the file holds needle; -1 when there is none.
 *
 * The file is read with pread() in blocks of BLOCK bytes into one buffer, without the GIL: no
 * page of it is mapped, so memory stays the same whatever the file's size. Each block is
 * searched 16 positions at a time, comparing the needle's first and last byte at once (GCC's and
 * Clang's vector extensions: SSE2 or NEON), and only the positions where both match are
 * compared whole: a fifth of glibc's memmem's CPU over the same blocks (docs/performance.md,
 * "The search", has the figures and how they were measured).
 */
#include "native.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define BLOCK (1 << 20)

#if defined(__GNUC__) || defined(__clang__)
typedef unsigned char lanes __attribute__((vector_size(16)));

/* The first p in [from, last] (last = the final start that leaves room for the needle) where
 * the needle begins, or NULL. */
static const unsigned char *scan(const unsigned char *from, const unsigned char *last,
                                 const unsigned char *needle, size_t n)
{
    lanes first, final;
    memset(&first, needle[0], sizeof first);
    memset(&final, needle[n - 1], sizeof final);
    const unsigned char *p = from;
    for (; p + 16 <= last + 1; p += 16) {
        lanes a, b;
        memcpy(&a, p, 16);
        memcpy(&b, p + n - 1, 16);
        lanes both = (lanes)((a == first) & (b == final));
        uint64_t half[2];
        memcpy(half, &both, 16);
        if ((half[0] | half[1]) == 0)
            continue;
        for (int i = 0; i < 16; i++)
            if (both[i] && memcmp(p + i, needle, n) == 0)
                return p + i;
    }
    for (; p <= last; p++)
        if (*p == needle[0] && memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}
#else
static const unsigned char *scan(const unsigned char *from, const unsigned char *last,
                                 const unsigned char *needle, size_t n)
{
    for (const unsigned char *p = from; p <= last; p++) {
        p = memchr(p, needle[0], (size_t)(last - p) + 1);
        if (p == NULL)
            return NULL;
        if (memcmp(p, needle, n) == 0)
            return p;
    }
    return NULL;
}
#endif

/* Blocks overlap by n - 1 bytes so that a needle across a block's end is found. Returns the
 * offset, -1 when absent, -2 on a read error (errno set). */
static long long find_in_file(int fd, const unsigned char *needle, size_t n, uint64_t start,
                              uint64_t end, unsigned char *block)
{
    uint64_t at = start;
    while (at + n <= end) {
        uint64_t want = end - at < BLOCK ? end - at : BLOCK;
        uint64_t held = 0;
        while (held < want) {
            ssize_t got = pread(fd, block + held, (size_t)(want - held), (off_t)(at + held));
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                return -2;
            if (got == 0)
                break;
            held += (uint64_t)got;
        }
        if (held < n)
            return -1; /* the file ends sooner than end said */
        const unsigned char *hit = scan(block, block + held - n, needle, n);
        if (hit != NULL)
            return (long long)(at + (uint64_t)(hit - block));
        if (held < want)
            return -1;
        at += held - (n - 1);
    }
    return -1;
}

PyObject *find_bytes(PyObject *module, PyObject *args)
{
    int fd;
    Py_buffer needle;
    unsigned long long start, end;
    (void)module;
    if (!PyArg_ParseTuple(args, "iy*KK:find_bytes", &fd, &needle, &start, &end))
        return NULL;
    if (needle.len < 1 || needle.len > 64) {
        PyBuffer_Release(&needle);
        PyErr_SetString(PyExc_ValueError, "find_bytes: the needle must be 1 to 64 bytes");
        return NULL;
    }
    unsigned char *block = malloc(BLOCK);
    if (block == NULL) {
        PyBuffer_Release(&needle);
        return PyErr_NoMemory();
    }
    long long found;
    Py_BEGIN_ALLOW_THREADS
    found = find_in_file(fd, needle.buf, (size_t)needle.len, start, end, block);
    Py_END_ALLOW_THREADS
    free(block);
    PyBuffer_Release(&needle);
    if (found == -2)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLongLong(found);
}
