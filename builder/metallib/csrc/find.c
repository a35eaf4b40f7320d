/* find_header: where the next metallib header is in a file (the C form of the search in
 * builder/metallib/embedded.py, which looks for every metallib in a binary).
 *
 * find_header(fd, start, end) -> int: the first offset o with start <= o and o + 88 <= end at
 * which the file holds the magic MTLB and a header that passes the checks of plausible() below
 * (embedded.py's plausible_header, the same checks); -1 when there is none.
 *
 * Only a header that passes is returned, so the caller's work per call is bounded (it proves the
 * library whole, or counts a header that does not parse against its limit): the file is read
 * once, whatever the number of magics in it. The file is read with pread() in blocks of BLOCK
 * bytes into one buffer, without the GIL: no page of it is mapped, so memory stays the same
 * whatever the file's size. Each block is searched 16 positions at a time, comparing the
 * magic's first and last byte at once (GCC's and Clang's vector extensions: SSE2 or NEON), and
 * only the positions where both match are compared whole: a fifth of glibc's memmem's CPU over
 * the same blocks (docs/performance.md, "The search", has the figures and how they were
 * measured).
 */
#include "native.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define BLOCK (1 << 20)
#define HEADER 88
#define MAGIC "MTLB"

#if defined(__GNUC__) || defined(__clang__)
typedef unsigned char lanes __attribute__((vector_size(16)));

/* The first p in [from, last] where the needle begins, or NULL; bytes up to last + n - 1 are
 * read. */
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

/* The span [offset, offset + size) starts at or after *cursor and ends by declared; on success
 * *cursor moves to its end. Written so that no sum can wrap. */
static int in_order(uint64_t offset, uint64_t size, uint64_t declared, uint64_t *cursor)
{
    if (offset < *cursor || offset > declared || size > declared - offset)
        return 0;
    *cursor = offset + size;
    return 1;
}

/* The checks every real library passes, from its 88 header bytes alone: a format version of
 * 1.0 to 9.99, the function list at 88, then the header extension (at least its ENDT), public
 * metadata, private metadata and bitcode in this order, each inside the declared size. */
static int plausible(const unsigned char *h)
{
    uint16_t major = u16_at(h + 6), minor = u16_at(h + 8);
    uint64_t declared = u64_at(h + 16), list_size = u64_at(h + 32);
    if (major < 1 || major > 9 || minor > 99 || u64_at(h + 24) != HEADER)
        return 0;
    if (declared < HEADER + 8 || list_size > declared - (HEADER + 8))
        return 0;
    uint64_t cursor = HEADER + 8 + list_size; /* the u32 count, the list, an ENDT at least */
    for (int field = 0; field < 3; field++)
        if (!in_order(u64_at(h + 40 + 16 * field), u64_at(h + 48 + 16 * field), declared, &cursor))
            return 0;
    return 1;
}

/* Blocks overlap by HEADER - 1 bytes so that every header lies whole in one block. Returns the
 * offset, -1 when absent, -2 on a read error (errno set). */
static long long find_in_file(int fd, uint64_t start, uint64_t end, unsigned char *block)
{
    const unsigned char *magic = (const unsigned char *)MAGIC;
    uint64_t at = start;
    while (at + HEADER <= end) {
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
        if (held < HEADER)
            return -1; /* the file ends sooner than end said */
        const unsigned char *last = block + held - HEADER;
        for (const unsigned char *from = block; from <= last;) {
            const unsigned char *hit = scan(from, last, magic, 4);
            if (hit == NULL)
                break;
            if (plausible(hit))
                return (long long)(at + (uint64_t)(hit - block));
            from = hit + 1;
        }
        if (held < want)
            return -1;
        at += held - (HEADER - 1);
    }
    return -1;
}

PyObject *find_header(PyObject *module, PyObject *args)
{
    int fd;
    unsigned long long start, end;
    (void)module;
    if (!PyArg_ParseTuple(args, "iKK:find_header", &fd, &start, &end))
        return NULL;
    unsigned char *block = malloc(BLOCK);
    if (block == NULL)
        return PyErr_NoMemory();
    long long found;
    Py_BEGIN_ALLOW_THREADS
    found = find_in_file(fd, start, end, block);
    Py_END_ALLOW_THREADS
    free(block);
    if (found == -2)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromLongLong(found);
}
