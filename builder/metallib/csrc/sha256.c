/* sha256_spans: the SHA-256 of many spans of one buffer, on several threads, with OpenSSL.
 *
 * sha256_spans(buffer, offsets, sizes, threads, fd=-1) -> bytes, the 32-byte digests in span order.
 *
 * With fd >= 0 (the open file the buffer maps), the spans are read with pread() in blocks of
 * BLOCK bytes into a buffer per thread instead of through the map: the kernel copies from the page
 * cache through its own large-page mapping, the hash then reads from the CPU cache, and no page
 * of the map is faulted in (nor torn down at exit). On the development VM that hashes 124 MB of
 * modules in about 80 ms of CPU instead of 105. The buffer still bounds the spans.
 *
 * verify hashes every module of a library (16,446 spans, 141 MB in mlx 0.32). Done from Python
 * each span costs an object or three and the threads contend for the GIL between calls; here the
 * spans are split by bytes between `threads` POSIX threads that run without the GIL, each with
 * one reused digest context. OpenSSL's SHA-256 uses the CPU's SHA extensions where present.
 * Built only when CMake finds OpenSSL (METALLIB_NATIVE_SHA256); native.py falls back to hashlib.
 */
#include "native.h"

#ifdef METALLIB_NATIVE_SHA256
#include <openssl/evp.h>
#include <pthread.h>

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 16
#define BLOCK (1 << 20)

typedef struct {
    const unsigned char *buf;
    int fd;
    const uint64_t *offsets, *sizes;
    Py_ssize_t begin, end;
    unsigned char *out;
    int failed;
} Job;

/* The bytes [at, at + want) of the file in the thread's block buffer, read when they are not
 * there yet; returns how many of them are there from *data (at least 1), 0 on a read error. */
typedef struct {
    unsigned char *block;
    uint64_t start, end; /* file range held */
} Window;

static uint64_t window_at(Window *w, int fd, uint64_t at, uint64_t want, const unsigned char **data)
{
    if (at < w->start || at >= w->end) {
        uint64_t held = 0;
        while (held < BLOCK) {
            ssize_t n = pread(fd, w->block + held, BLOCK - held, (off_t)(at + held));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            held += (uint64_t)n;
        }
        w->start = at;
        w->end = at + held;
        if (held == 0)
            return 0;
    }
    *data = w->block + (at - w->start);
    return want < w->end - at ? want : w->end - at;
}

static int hash_span(EVP_MD_CTX *ctx, const Job *job, Window *w, Py_ssize_t i)
{
    uint64_t at = job->offsets[i], left = job->sizes[i];
    if (job->fd < 0)
        return EVP_DigestUpdate(ctx, job->buf + at, left) == 1;
    while (left > 0) {
        const unsigned char *data;
        uint64_t n = window_at(w, job->fd, at, left, &data);
        if (n == 0 || EVP_DigestUpdate(ctx, data, n) != 1)
            return 0;
        at += n;
        left -= n;
    }
    return 1;
}

static void *run_job(void *arg)
{
    Job *job = arg;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL); /* fetched once: no lookup per span */
#else
    const EVP_MD *md = EVP_sha256();
#endif
    Window w = {job->fd >= 0 ? malloc(BLOCK) : NULL, 0, 0};
    job->failed = ctx == NULL || md == NULL || (job->fd >= 0 && w.block == NULL);
    for (Py_ssize_t i = job->begin; i < job->end && !job->failed; i++) {
        job->failed = EVP_DigestInit_ex(ctx, md, NULL) != 1 || !hash_span(ctx, job, &w, i) ||
                      EVP_DigestFinal_ex(ctx, job->out + 32 * i, NULL) != 1;
    }
    free(w.block);
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    EVP_MD_free(md);
#endif
    EVP_MD_CTX_free(ctx);
    return NULL;
}

/* Read a list of non-negative ints into a new array; NULL with an exception set on failure. */
static uint64_t *u64_array(PyObject *list, Py_ssize_t count)
{
    uint64_t *out = PyMem_Malloc((count > 0 ? count : 1) * sizeof *out);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        out[i] = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(list, i));
        if (PyErr_Occurred()) {
            PyMem_Free(out);
            return NULL;
        }
    }
    return out;
}

PyObject *sha256_spans(PyObject *module, PyObject *args)
{
    Py_buffer view;
    PyObject *offset_list, *size_list;
    int threads, fd = -1;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*O!O!i|i:sha256_spans", &view, &PyList_Type, &offset_list, &PyList_Type,
                          &size_list, &threads, &fd))
        return NULL;
    PyObject *result = NULL;
    uint64_t *offsets = NULL, *sizes = NULL;
    Py_ssize_t count = PyList_GET_SIZE(offset_list);
    if (PyList_GET_SIZE(size_list) != count) {
        PyErr_SetString(PyExc_ValueError, "sha256_spans: offsets and sizes differ in length");
        goto done;
    }
    offsets = u64_array(offset_list, count);
    sizes = offsets ? u64_array(size_list, count) : NULL;
    if (sizes == NULL)
        goto done;
    uint64_t total = 0, limit = (uint64_t)view.len;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (offsets[i] > limit || sizes[i] > limit - offsets[i]) {
            PyErr_Format(PyExc_ValueError, "sha256_spans: span %zd (%llu+%llu) is outside the %llu-byte buffer",
                         i, (unsigned long long)offsets[i], (unsigned long long)sizes[i], (unsigned long long)limit);
            goto done;
        }
        total += sizes[i];
    }
    result = PyBytes_FromStringAndSize(NULL, 32 * count);
    if (result == NULL)
        goto done;
    threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    if (threads > count)
        threads = count > 0 ? (int)count : 1;
    Job jobs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    /* split by bytes: job k takes the spans up to the k+1-th share of the total */
    Py_ssize_t next = 0;
    uint64_t done_bytes = 0;
    for (int k = 0; k < threads; k++) {
        uint64_t goal = total / threads * (k + 1);
        Py_ssize_t end = next;
        while (end < count && (k == threads - 1 || done_bytes < goal))
            done_bytes += sizes[end++];
        jobs[k] = (Job){view.buf, fd, offsets, sizes, next, end, (unsigned char *)PyBytes_AS_STRING(result), 0};
        next = end;
    }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int k = 1; k < threads; k++)
        started[k] = pthread_create(&ids[k], NULL, run_job, &jobs[k]) == 0;
    run_job(&jobs[0]);
    for (int k = 1; k < threads; k++) {
        if (started[k])
            pthread_join(ids[k], NULL);
        else
            run_job(&jobs[k]); /* no thread to be had: do its share here */
    }
    for (int k = 0; k < threads; k++)
        failed |= jobs[k].failed;
    Py_END_ALLOW_THREADS
    if (failed) {
        Py_CLEAR(result);
        PyErr_SetString(PyExc_RuntimeError, fd >= 0 ? "sha256_spans: could not read the file or compute a SHA-256 digest"
                                                    : "sha256_spans: OpenSSL could not compute a SHA-256 digest");
    }
done:
    PyMem_Free(offsets);
    PyMem_Free(sizes);
    PyBuffer_Release(&view);
    return result;
}
#endif
