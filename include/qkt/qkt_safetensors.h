/* safetensors files and checkpoints of a qkt parameter store.
 *
 * File layout (https://github.com/huggingface/safetensors):
 *     u64 N (little-endian) | N bytes of UTF-8 JSON | raw little-endian tensor data
 * The JSON is an object: tensor name -> {"dtype": "F32", "shape": [4, 8],
 * "data_offsets": [begin, end)} with offsets relative to the first data byte, plus
 * an optional "__metadata__" object of string -> string.
 *
 * The reader validates the whole file before exposing anything (sizes, UTF-8, JSON,
 * every field, dtypes, shape x dtype size == byte range, ranges inside the data and
 * tiling it without overlap or holes, unique names, string metadata); any problem
 * is a -1 with one line naming the file and the problem. The writer replaces its
 * target atomically (temp file, fsync, rename, fsync of the directory).
 *
 * Checkpoints store every parameter under its own name (t->name) with its shape in
 * the build's scalar type (F32, or F64 under QKT_DOUBLE), plus caller metadata
 * (model config, step) and extra tensors (optimizer moments, RNG state). */
#ifndef QKT_SAFETENSORS_H
#define QKT_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checksums (qkt_safetensors_write_checked, used for checkpoints): the CRC-32C of every
 * tensor's bytes is stored in the metadata as "crc32c:<name>" = 8 hex digits, and
 * "crc32c_header" holds the CRC-32C of the whole header as written with "00000000" in
 * its own place (so an edit of any metadata, a name or an offset is seen too). The
 * reader verifies them all (a mismatch is a -1 naming the tensor or the header: the
 * file is damaged) and hides these keys from `meta`. A file with checksums must have
 * one for every tensor and the header; a file without any (PyTorch, numpy, an older
 * qkt) still loads, with `checksummed` false so a program can say it was not verified. */
#define QKT_ST_CRC_PREFIX "crc32c:"
#define QKT_ST_CRC_HEADER "crc32c_header"

/* ---------------------------------------------------------------- dtypes */
typedef enum qkt_st_dtype {
    QKT_ST_BOOL, QKT_ST_U8, QKT_ST_I8, QKT_ST_F8_E5M2, QKT_ST_F8_E4M3,
    QKT_ST_I16, QKT_ST_U16, QKT_ST_F16, QKT_ST_BF16,
    QKT_ST_I32, QKT_ST_U32, QKT_ST_F32,
    QKT_ST_I64, QKT_ST_U64, QKT_ST_F64,
    QKT_ST_DTYPE_COUNT
} qkt_st_dtype;
#ifdef QKT_DOUBLE
#define QKT_ST_REAL QKT_ST_F64
#else
#define QKT_ST_REAL QKT_ST_F32
#endif
const char *qkt_st_dtype_name(qkt_st_dtype d); /* "F32" */
size_t qkt_st_dtype_size(qkt_st_dtype d);     /* bytes per element */

#define QKT_ST_MAX_DIMS 8                     /* larger ranks are rejected */
#define QKT_ST_MAX_HEADER (100u * 1024 * 1024) /* as the reference implementation */

/* ---------------------------------------------------------------- reading */
typedef struct qkt_st_tensor {
    char *name;
    qkt_st_dtype dtype;
    int ndim; /* 0 = scalar */
    int64_t shape[QKT_ST_MAX_DIMS];
    int64_t numel;
    size_t begin, end;   /* byte range inside the data section */
    const uint8_t *data; /* end - begin bytes, little-endian, NOT aligned */
} qkt_st_tensor;

typedef struct qkt_st_meta {
    const char *key, *value;
} qkt_st_meta;

typedef struct qkt_safetensors {
    qkt_st_tensor *t; /* in file order (header order) */
    int n;
    qkt_st_meta *meta; /* owned strings (without the checksum keys) */
    int n_meta;
    bool checksummed;  /* every tensor's CRC-32C was stored and verified */
    uint64_t header_len;
    uint8_t *owned; /* the file's bytes when read from a file */
} qkt_safetensors;

/* Validate buf[0..n) as a safetensors file; on success `st` describes it and its
 * tensors point INTO buf (keep buf alive, don't modify it). `label` (the file name)
 * starts every error message. On error st is zeroed and -1 returned. */
int qkt_safetensors_parse(const uint8_t *buf, size_t n, const char *label, qkt_safetensors *st, qkt_err *err);
/* Read a whole regular file (size-checked) and parse it; st owns the bytes. */
int qkt_safetensors_read(const char *path, qkt_safetensors *st, qkt_err *err);
void qkt_safetensors_free(qkt_safetensors *st);
const qkt_st_tensor *qkt_safetensors_find(const qkt_safetensors *st, const char *name);
const char *qkt_safetensors_meta(const qkt_safetensors *st, const char *key); /* NULL if absent */

/* Typed copies out of a tensor. `n` is the caller's capacity and must equal
 * t->numel. to_real: F32 or F64 -> qkt_real (F64 -> F32 rounds). to_i64/to_i32/to_u64:
 * any integer dtype (or BOOL), each value range-checked. -1 + message otherwise;
 * `label` (the file name) starts the message. */
int qkt_st_tensor_to_real(const qkt_st_tensor *t, qkt_real *out, int64_t n, const char *label, qkt_err *err);
int qkt_st_tensor_to_i64(const qkt_st_tensor *t, int64_t *out, int64_t n, const char *label, qkt_err *err);
int qkt_st_tensor_to_i32(const qkt_st_tensor *t, int32_t *out, int64_t n, const char *label, qkt_err *err);
int qkt_st_tensor_to_u64(const qkt_st_tensor *t, uint64_t *out, int64_t n, const char *label, qkt_err *err);

/* ---------------------------------------------------------------- writing */
/* One tensor to write: `data` holds numel(shape) host values of `dtype`. */
typedef struct qkt_st_write {
    const char *name;
    qkt_st_dtype dtype;
    int ndim;
    int64_t shape[QKT_ST_MAX_DIMS];
    const void *data;
} qkt_st_write;

/* Write tensors (laid out in the given order, no gaps) and metadata pairs to `path`
 * atomically: a temp file in the same directory is written, fsync'ed and renamed
 * over `path`, then the directory is fsync'ed. Any failure returns -1 with one line
 * naming the path and the OS error, removes the temp file and leaves a previous
 * file at `path` untouched. A target that exists but is not a regular file (a
 * directory, /dev/full, a fifo) is refused rather than replaced. Names and
 * metadata must be valid UTF-8 (-1 otherwise); duplicate names, "__metadata__" as a
 * tensor name and negative dims are programmer errors (QKT_CHECK). */
int qkt_safetensors_write(const char *path, const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta,
                          qkt_err *err);
/* The same with checksums of every tensor and of the header (see above). */
int qkt_safetensors_write_checked(const char *path, const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta,
                                  qkt_err *err);
/* The same bytes as qkt_safetensors_write to an open descriptor (a pipe, a socket, /dev/full), no atomicity;
 * `label` names the destination in messages. */
int qkt_safetensors_write_fd(int fd, const char *label, const qkt_st_write *t, int n, const qkt_st_meta *meta,
                             int n_meta, qkt_err *err);

/* ---------------------------------------------------------------- checkpoints */
/* Save: every parameter of `p` under t->name, shape t->shape, dtype QKT_ST_REAL, in
 * store order, then `extra` (optimizer moments "optim.m"/"optim.v" as flat arrays,
 * the RNG as U64 (4), ...). Extra names must not collide with parameter names.
 * Written with checksums (qkt_safetensors_write_checked). */
int qkt_checkpoint_save(const char *path, const qkt_params *p, const qkt_st_meta *meta, int n_meta,
                        const qkt_st_write *extra, int n_extra, qkt_err *err);

/* An opened, fully validated checkpoint file. */
typedef struct qkt_checkpoint {
    qkt_safetensors st;
    char *path;
} qkt_checkpoint;
int qkt_checkpoint_open(const char *path, qkt_checkpoint *ck, qkt_err *err);
void qkt_checkpoint_close(qkt_checkpoint *ck);
const char *qkt_checkpoint_meta(const qkt_checkpoint *ck, const char *key); /* NULL if absent */
/* Config checks for models: the key must be present and equal `have`, else
 * "checkpoint X was saved for n_layer=4, this model has 2" (or "... has no
 * metadata 'n_layer'"). Integers and reals are compared as numbers. */
int qkt_checkpoint_expect_str(const qkt_checkpoint *ck, const char *key, const char *have, qkt_err *err);
int qkt_checkpoint_expect_int(const qkt_checkpoint *ck, const char *key, long long have, qkt_err *err);
int qkt_checkpoint_expect_real(const qkt_checkpoint *ck, const char *key, double have, qkt_err *err);
/* Integer metadata (e.g. "step"): -1 + message if absent or not an integer. */
int qkt_checkpoint_meta_int(const qkt_checkpoint *ck, const char *key, long long *out, qkt_err *err);

/* A destination for one extra tensor on load: the file's tensor `name` must have
 * exactly `shape`; it is converted into `dtype` (QKT_ST_REAL from F32/F64; I32, I64
 * or U64 from any integer dtype, range-checked) and written to `data`. */
typedef struct qkt_ckpt_slot {
    const char *name;
    qkt_st_dtype dtype;
    int ndim;
    int64_t shape[QKT_ST_MAX_DIMS];
    void *data;
} qkt_ckpt_slot;

/* Tensors in the file that are neither a parameter nor a requested slot: by default
 * they are an error when "parameter-like", i.e. not under a state prefix ("optim.",
 * "rng.", "train."), because a parameter that would be silently ignored means the
 * file belongs to another model (more layers, another attention scale variant).
 * QKT_CKPT_ALLOW_UNUSED accepts them (e.g. a PyTorch export with buffers). */
enum { QKT_CKPT_ALLOW_UNUSED = 1 };

/* All-or-nothing restore: first checks every parameter of `p` is present with the
 * exact shape, a float dtype and finite values, every slot likewise (finite if real),
 * and the unused-tensor rule; only then copies (converting F32 <-> F64). On -1 nothing was modified. */
int qkt_checkpoint_restore(const qkt_checkpoint *ck, qkt_params *p, const qkt_ckpt_slot *slots, int n_slots,
                           int flags, qkt_err *err);
/* open + restore + close. */
int qkt_checkpoint_load(const char *path, qkt_params *p, const qkt_ckpt_slot *slots, int n_slots, int flags,
                        qkt_err *err);

#ifdef __cplusplus
}
#endif
#endif
