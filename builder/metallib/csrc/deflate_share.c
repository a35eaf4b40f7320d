/* deflate_share: a library compressed as a wheel stores it, in parallel parts, and every
 * compressed bit charged to the input bytes it decodes into (builder/size/download.py is the
 * model and its pure-Python twin; the two give identical results).
 *
 * deflate_share(buffer, cuts, starts, level, window, step, spread, threads) -> (part_sizes, costs)
 *
 *   cuts    packed u64: where each part starts (cuts[0] == 0, increasing); the last part ends at
 *           the end of the buffer.
 *   starts  packed u64: where each segment starts (starts[0] == 0, strictly increasing); every
 *           cut is a segment start, so a segment lies in one part.
 *   part_sizes  packed u64: each part's compressed bytes.
 *   costs       packed u64: each segment's share of the compressed stream, in bits.
 *
 * Each part is raw deflate (zlib, `level`, 15-bit window, memLevel 8, default strategy) primed
 * with the `window` bytes before it as its dictionary, ended by Z_SYNC_FLUSH (the last part by
 * Z_FINISH), as parallel gzip implementations do: the parts concatenated are one valid deflate
 * stream of the whole buffer. Each part is then inflated (with the same dictionary) `step`
 * compressed bytes at a time; the bits of each step are spread over the bytes that step decoded,
 * by cumulative floor, so every part's bits are charged exactly once. Bits of steps that decode
 * to nothing (a block's Huffman tables, which serve the whole block) are spread over the next
 * `spread` bytes of the part instead; bits after the part's last output (the flush marker) go to
 * its last segment. The inflated bytes are compared with the input. With step 0 only the
 * part sizes are computed (costs all 0): a total without the attribution's inflate pass.
 *
 * Parts are taken from a shared counter by up to `threads` POSIX threads without the GIL; the
 * result does not depend on the thread count. Built only when CMake finds zlib (HAS_DEFLATE).
 */
#include "native.h"

#ifdef METALLIB_NATIVE_ZLIB
#include <pthread.h>
#include <stdlib.h>
#include <zlib.h>

#define MAX_THREADS 16

typedef struct {
    const unsigned char *buf;
    uint64_t len;
    const uint64_t *cuts, *starts;
    Py_ssize_t parts, segments;
    int level;
    uint64_t window, step, spread;
    uint64_t *part_sizes, *costs;
    pthread_mutex_t lock;
    Py_ssize_t next;
    int error; /* 0, or what failed: 1 memory, 2 zlib, 3 the round trip */
} Shared;

typedef struct {
    unsigned char *data;
    size_t size;
} Scratch;

static int reserve(Scratch *s, size_t size)
{
    if (s->size >= size)
        return 1;
    unsigned char *grown = realloc(s->data, size);
    if (grown == NULL)
        return 0;
    s->data = grown;
    s->size = size;
    return 1;
}

/* The part [a, b) compressed into out->data; its length, or 0 on failure (*error set). */
static size_t compress_part(const Shared *sh, uint64_t a, uint64_t b, int last, Scratch *out, int *error)
{
    z_stream z = {0};
    if (deflateInit2(&z, sh->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        *error = 1;
        return 0;
    }
    uint64_t dict = a < sh->window ? a : sh->window;
    size_t produced = 0;
    int ok = dict == 0 || deflateSetDictionary(&z, sh->buf + a - dict, (uInt)dict) == Z_OK;
    if (!ok)
        *error = 2;
    ok = ok && reserve(out, deflateBound(&z, (uLong)(b - a)) + 64);
    z.next_in = (Bytef *)(sh->buf + a);
    z.avail_in = (uInt)(b - a);
    /* As Python's zlib does it: all input with Z_NO_FLUSH, then the flush with no input. */
    for (int flush = Z_NO_FLUSH; ok;) {
        if (out->size - produced < 64 && !reserve(out, out->size * 2)) {
            ok = 0;
            break;
        }
        z.next_out = out->data + produced;
        z.avail_out = (uInt)(out->size - produced);
        int status = deflate(&z, flush);
        produced = out->size - z.avail_out;
        if (status == Z_STREAM_ERROR) {
            ok = 0;
            *error = 2;
        } else if (flush == Z_NO_FLUSH && z.avail_in == 0) {
            flush = last ? Z_FINISH : Z_SYNC_FLUSH;
        } else if (flush != Z_NO_FLUSH && (last ? status == Z_STREAM_END : z.avail_out > 0)) {
            break;
        }
    }
    deflateEnd(&z);
    if (!ok) {
        if (*error == 0)
            *error = 1;
        return 0;
    }
    return produced;
}

/* Charge `bits` to the bytes [from, to) of the input, across the segments they span (*seg is
 * the segment holding `from`; it is left at the one holding to - 1). */
static void charge(const Shared *sh, Py_ssize_t *seg, uint64_t from, uint64_t to, uint64_t bits)
{
    uint64_t span = to - from, given = 0;
    for (;;) {
        uint64_t seg_end = *seg + 1 < sh->segments ? sh->starts[*seg + 1] : sh->len;
        uint64_t stop = seg_end < to ? seg_end : to;
        uint64_t upto = bits * (stop - from) / span;
        sh->costs[*seg] += upto - given;
        given = upto;
        if (stop == to)
            break;
        (*seg)++;
    }
}

/* Inflate the part `step` bytes at a time and charge each step's bits; 0 on failure. */
static int attribute_part(Shared *sh, uint64_t a, uint64_t b, const Scratch *packed, size_t packed_len,
                          Scratch *plain, Py_ssize_t first_seg)
{
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK)
        return 1;
    uint64_t dict = a < sh->window ? a : sh->window;
    int error = 0;
    if (dict && inflateSetDictionary(&z, sh->buf + a - dict, (uInt)dict) != Z_OK)
        error = 2;
    if (!error && !reserve(plain, (size_t)(b - a) + 1))
        error = 1;
    Py_ssize_t seg = first_seg;
    uint64_t pos = a, pending = 0, bits;
    size_t used = 0;
    while (!error && used < packed_len) {
        size_t take = packed_len - used < sh->step ? packed_len - used : (size_t)sh->step;
        z.next_in = packed->data + used;
        z.avail_in = (uInt)take;
        z.next_out = plain->data + (pos - a);
        z.avail_out = (uInt)(plain->size - (pos - a));
        int status = inflate(&z, Z_SYNC_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
            error = 3;
            break;
        }
        used += take - z.avail_in;
        bits = 8 * (uint64_t)(take - z.avail_in);
        uint64_t to = a + (uint64_t)(z.next_out - plain->data);
        if (to > b || (z.avail_in && status != Z_STREAM_END)) {
            error = 3;
            break;
        }
        if (to == pos) {
            pending += bits;
        } else {
            if (pending) { /* tables: over the next `spread` bytes */
                Py_ssize_t ahead = seg;
                charge(sh, &ahead, pos, b - pos < sh->spread ? b : pos + sh->spread, pending);
            }
            charge(sh, &seg, pos, to, bits);
            if (to < b && to == (seg + 1 < sh->segments ? sh->starts[seg + 1] : sh->len))
                seg++;
            pos = to;
            pending = 0;
        }
        if (status == Z_STREAM_END && used < packed_len)
            error = 3;
    }
    inflateEnd(&z);
    if (!error && (pos != b || memcmp(plain->data, sh->buf + a, (size_t)(b - a)) != 0))
        error = 3;
    if (!error && pending) { /* the flush marker after the last byte: its segment pays */
        Py_ssize_t last = seg;
        while (last > first_seg && sh->starts[last] >= b)
            last--;
        sh->costs[last] += pending;
    }
    return error;
}

static Py_ssize_t segment_of(const Shared *sh, uint64_t offset)
{
    Py_ssize_t lo = 0, hi = sh->segments - 1;
    while (lo < hi) { /* the last segment starting at or before offset */
        Py_ssize_t mid = lo + (hi - lo + 1) / 2;
        if (sh->starts[mid] <= offset)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static void *worker(void *arg)
{
    Shared *sh = arg;
    Scratch packed = {NULL, 0}, plain = {NULL, 0};
    for (;;) {
        pthread_mutex_lock(&sh->lock);
        Py_ssize_t k = sh->error ? sh->parts : sh->next++;
        pthread_mutex_unlock(&sh->lock);
        if (k >= sh->parts)
            break;
        uint64_t a = sh->cuts[k], b = k + 1 < sh->parts ? sh->cuts[k + 1] : sh->len;
        int error = 0;
        size_t n = compress_part(sh, a, b, k + 1 == sh->parts, &packed, &error);
        if (!error) {
            sh->part_sizes[k] = n;
            if (sh->step)
                error = attribute_part(sh, a, b, &packed, n, &plain, segment_of(sh, a));
        }
        if (error) {
            pthread_mutex_lock(&sh->lock);
            if (!sh->error)
                sh->error = error;
            pthread_mutex_unlock(&sh->lock);
        }
    }
    free(packed.data);
    free(plain.data);
    return NULL;
}

/* A packed u64 column as a pointer; NULL with ValueError when its length is not whole. */
static const uint64_t *column(const Py_buffer *view, Py_ssize_t *count, const char *what)
{
    if (view->len % 8 != 0) {
        PyErr_Format(PyExc_ValueError, "deflate_share: %s is not packed u64 values", what);
        return NULL;
    }
    *count = view->len / 8;
    return view->buf;
}

static int check_columns(const Shared *sh)
{
    if (sh->parts < 1 || sh->segments < 1 || sh->cuts[0] != 0 || sh->starts[0] != 0 || sh->len == 0) {
        PyErr_SetString(PyExc_ValueError, "deflate_share: cuts and starts must begin at 0 in a non-empty buffer");
        return 0;
    }
    for (Py_ssize_t i = 1; i < sh->segments; i++)
        if (sh->starts[i] <= sh->starts[i - 1] || sh->starts[i] >= sh->len) {
            PyErr_Format(PyExc_ValueError, "deflate_share: segment %zd does not start inside the buffer after the one before", i);
            return 0;
        }
    for (Py_ssize_t k = 1; k < sh->parts; k++) {
        if (sh->cuts[k] <= sh->cuts[k - 1] || sh->starts[segment_of(sh, sh->cuts[k])] != sh->cuts[k]) {
            PyErr_Format(PyExc_ValueError, "deflate_share: cut %zd is not an increasing segment start", k);
            return 0;
        }
    }
    if (sh->window > 32768 || sh->step > (1 << 20) || sh->spread == 0 || sh->level < 0 || sh->level > 9) {
        PyErr_SetString(PyExc_ValueError, "deflate_share: level 0-9, window up to 32768, step up to 1 MiB, spread > 0");
        return 0;
    }
    return 1;
}

PyObject *deflate_share(PyObject *module, PyObject *args)
{
    Py_buffer view, cut_view, start_view;
    int level, threads;
    unsigned long long window, step, spread;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*y*y*iKKKi:deflate_share", &view, &cut_view, &start_view, &level, &window,
                          &step, &spread, &threads))
        return NULL;
    PyObject *sizes = NULL, *costs = NULL, *result = NULL;
    Shared sh = {.buf = view.buf, .len = (uint64_t)view.len, .level = level, .window = window, .step = step,
                 .spread = spread};
    if ((sh.cuts = column(&cut_view, &sh.parts, "cuts")) == NULL ||
        (sh.starts = column(&start_view, &sh.segments, "starts")) == NULL || !check_columns(&sh))
        goto done;
    sizes = PyBytes_FromStringAndSize(NULL, sh.parts * 8);
    costs = PyBytes_FromStringAndSize(NULL, sh.segments * 8);
    if (sizes == NULL || costs == NULL)
        goto done;
    sh.part_sizes = (uint64_t *)PyBytes_AS_STRING(sizes);
    sh.costs = (uint64_t *)PyBytes_AS_STRING(costs);
    memset(sh.costs, 0, sh.segments * 8);
    threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    if (threads > sh.parts)
        threads = (int)sh.parts;
    pthread_mutex_init(&sh.lock, NULL);
    pthread_t ids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    Py_BEGIN_ALLOW_THREADS
    for (int k = 1; k < threads; k++)
        started[k] = pthread_create(&ids[k], NULL, worker, &sh) == 0;
    worker(&sh); /* this thread works too, and finishes what threads that did not start left */
    for (int k = 1; k < threads; k++)
        if (started[k])
            pthread_join(ids[k], NULL);
    Py_END_ALLOW_THREADS
    pthread_mutex_destroy(&sh.lock);
    if (sh.error == 1)
        PyErr_NoMemory();
    else if (sh.error == 2)
        PyErr_SetString(PyExc_RuntimeError, "deflate_share: zlib refused the parameters");
    else if (sh.error == 3)
        PyErr_SetString(PyExc_RuntimeError, "deflate_share: a part did not inflate back to its input");
    else
        result = PyTuple_Pack(2, sizes, costs);
done:
    Py_XDECREF(sizes);
    Py_XDECREF(costs);
    PyBuffer_Release(&view);
    PyBuffer_Release(&cut_view);
    PyBuffer_Release(&start_view);
    return result;
}
#endif
