/* qkt_dist.h over MPI: the one file of qkt that includes mpi.h, and the whole of
 * libqkt_mpi (qkt_dist_use_mpi installs it in libqkt's dispatch). Everything travels as
 * bytes (MPI_BYTE) in messages of at most CHUNK bytes (MPI counts are ints); the only
 * arithmetic, the gradient sum, is done here in rank order, never by MPI_Allreduce
 * (whose order of additions MPI picks, and which may differ between runs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "dist_backend.h"

static bool g_on;          /* MPI_Init was called (by us) */
static bool g_broken;      /* a rank is gone: finalizing would wait for it */
static int g_rank, g_size = 1, g_local = 1;
static qkt_dist_stats g_st;
static char g_lib[MPI_MAX_LIBRARY_VERSION_STRING];

/* Largest message: 64 MiB keeps counts far from INT_MAX; the sum's pipeline uses SUM_CHUNK. */
#define CHUNK ((size_t)64 << 20)
#define SUM_CHUNK ((int64_t)1 << 16) /* values per pipelined piece of the ordered sum */
#define TAG_SUM 0x5157              /* the sum's own tag, apart from the callers' */

static const char *mpi_library(void) {
    if (!g_lib[0]) {
        int n = 0;
        MPI_Get_library_version(g_lib, &n); /* callable before MPI_Init */
        char *nl = strchr(g_lib, '\n');
        if (nl) *nl = 0;
        char *comma = strchr(g_lib, ',');
        if (comma) *comma = 0; /* "Open MPI v4.1.4" */
    }
    return g_lib;
}

static int mpi_init(int *argc, char ***argv, qkt_err *err) {
    (void)err;
    if (g_on || qkt_dist_launcher_size() == 0) return 0; /* a plain start: one process, no MPI */
    int done = 0;
    MPI_Initialized(&done);
    if (!done) MPI_Init(argc, argv);
    g_on = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm node; /* the ranks sharing this host's memory (and cores) */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &g_local);
    MPI_Comm_free(&node);
    return 0;
}

static void mpi_set_broken(void) { g_broken = true; }

static void mpi_finalize(void) {
    if (!g_on) return;
    if (g_broken) {
        fflush(stdout), fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
    g_on = false;
}

static void mpi_abort(int code) {
    if (g_on) { /* MPI's own way to end every rank of the job at once */
        qkt_logf(QKT_LOG_ERROR, "qkt: MPI rank %d ends the job (status %d)", g_rank, code);
        MPI_Abort(MPI_COMM_WORLD, code);
    } /* outside a job: qkt_dist_abort goes on to the fatal hook */
}

static int mpi_rank(void) { return g_rank; }
static int mpi_size(void) { return g_size; }
static int mpi_local_size(void) { return g_local; }

static const char *mpi_host(void) {
    static char host[MPI_MAX_PROCESSOR_NAME + 1];
    if (!host[0]) {
        int n = 0;
        if (g_on) MPI_Get_processor_name(host, &n);
        if (!host[0]) snprintf(host, sizeof host, "%s", getenv("HOSTNAME") ? getenv("HOSTNAME") : "localhost");
    }
    return host;
}

static void mpi_barrier(void) {
    if (g_size < 2) return;
    double t = qkt_now_s();
    MPI_Barrier(MPI_COMM_WORLD);
    g_st.wait_s += qkt_now_s() - t;
}

static void mpi_bcast(void *buf, size_t n, int root) {
    QKT_CHECK(root >= 0 && root < g_size, "qkt_dist_bcast: root %d of %d ranks", root, g_size);
    if (g_size < 2) return;
    double t = qkt_now_s();
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t m = n - off < CHUNK ? n - off : CHUNK;
        MPI_Bcast((char *)buf + off, (int)m, MPI_BYTE, root, MPI_COMM_WORLD);
    }
    if (g_rank == root) g_st.bytes_sent += (int64_t)n;
    else g_st.bytes_recv += (int64_t)n;
    g_st.comm_s += qkt_now_s() - t;
}

static void mpi_allgather(const void *mine, void *all, size_t n) {
    QKT_CHECK(n <= CHUNK, "qkt_dist_allgather: %zu bytes per rank (at most %zu)", n, CHUNK);
    if (g_size < 2) {
        if (n) memmove(all, mine, n);
        return;
    }
    double t = qkt_now_s();
    MPI_Allgather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, MPI_COMM_WORLD);
    g_st.bytes_sent += (int64_t)n;
    g_st.bytes_recv += (int64_t)n * (g_size - 1);
    g_st.comm_s += qkt_now_s() - t;
}

static void mpi_sum_ordered(qkt_real *x, int64_t n) {
    if (g_size < 2 || n == 0) return;
    const int me = g_rank, last = g_size - 1;
    double t = qkt_now_s();
    int64_t pieces = (n + SUM_CHUNK - 1) / SUM_CHUNK;
    MPI_Request *req = qkt_malloc((size_t)pieces * sizeof *req);
    qkt_real *in = me > 0 ? qkt_malloc((size_t)SUM_CHUNK * sizeof *in) : NULL;
    /* Rank r: piece k of the partial sum of ranks 0..r-1 arrives, gets x_r added and goes
     * on to r + 1 while piece k + 1 arrives. x's piece is final once sent: it is sent
     * from x itself (non-blocking) and never touched again before the broadcast. */
    for (int64_t k = 0; k < pieces; k++) {
        int64_t off = k * SUM_CHUNK, m = n - off < SUM_CHUNK ? n - off : SUM_CHUNK;
        int bytes = (int)((size_t)m * sizeof(qkt_real));
        if (me > 0) {
            MPI_Recv(in, bytes, MPI_BYTE, me - 1, TAG_SUM, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            g_st.bytes_recv += bytes;
            qkt_real *xo = x + off;
            for (int64_t i = 0; i < m; i++) xo[i] = in[i] + xo[i]; /* (x_0 + .. + x_{r-1}) + x_r */
        }
        req[k] = MPI_REQUEST_NULL;
        if (me < last) {
            MPI_Isend(x + off, bytes, MPI_BYTE, me + 1, TAG_SUM, MPI_COMM_WORLD, &req[k]);
            g_st.bytes_sent += bytes;
        }
    }
    MPI_Waitall((int)pieces, req, MPI_STATUSES_IGNORE);
    free(req);
    free(in);
    g_st.comm_s += qkt_now_s() - t; /* the broadcast below counts itself */
    mpi_bcast(x, (size_t)n * sizeof(qkt_real), last);
    g_st.sum_s += qkt_now_s() - t;
    g_st.sums++;
}

static void mpi_send(const void *buf, size_t n, int to, int tag) {
    QKT_CHECK(to >= 0 && to < g_size && to != g_rank && tag >= 0 && n <= CHUNK, "qkt_dist_send: %zu bytes to rank %d of %d, tag %d",
              n, to, g_size, tag);
    MPI_Send(buf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD);
    g_st.bytes_sent += (int64_t)n;
}

static void mpi_recv(void *buf, size_t n, int from, int tag) {
    QKT_CHECK(from >= 0 && from < g_size && from != g_rank && tag >= 0 && n <= CHUNK,
              "qkt_dist_recv: %zu bytes from rank %d of %d, tag %d", n, from, g_size, tag);
    MPI_Recv(buf, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    g_st.bytes_recv += (int64_t)n;
}

static bool mpi_probe(int from, int tag) {
    if (g_size < 2) return false;
    int flag = 0;
    MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
}

static void mpi_get_stats(qkt_dist_stats *st) { *st = g_st; }

static const qkt__dist_backend mpi_backend = {
    .library = mpi_library,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .set_broken = mpi_set_broken,
    .abort = mpi_abort,
    .rank = mpi_rank,
    .size = mpi_size,
    .local_size = mpi_local_size,
    .host = mpi_host,
    .barrier = mpi_barrier,
    .bcast = mpi_bcast,
    .allgather = mpi_allgather,
    .sum_ordered = mpi_sum_ordered,
    .send = mpi_send,
    .recv = mpi_recv,
    .probe = mpi_probe,
    .get_stats = mpi_get_stats,
};

void qkt_dist_use_mpi(void) { qkt__dist_set_backend(&mpi_backend); }
