/* qkt_data_seed_split: a split's stream restarted from another seed is that seed's stream
 * for the split (bit for bit), qkt_data_reset returns to it, and the other split is left
 * alone. Two sources with different seeds seeded with one validation seed validate on the
 * same sequences (the study's one validation set); a text source too. */
#include <stdlib.h>
#include <string.h>

#include "qkt_data.h"
#include "qkt_test.h"

#define B 40

typedef struct {
    int32_t idx[B * 64], tgt[B * 64];
} batch;

static void draw(qkt_data *d, qkt_data_split s, batch *b) { qkt_data_batch(d, s, B, b->idx, b->tgt, NULL); }
static bool same(const batch *a, const batch *b) { return !memcmp(a, b, sizeof *a); }

static void check(const char *spec) {
    qkt_err err;
    qkt_data *d2, *d3, *d7, *fresh2;
    qkt_data_opts o2 = {.seq_len = 32, .seed = 2}, o3 = {.seq_len = 32, .seed = 3}, o7 = {.seq_len = 32, .seed = 7};
    EXPECT(qkt_data_open(&d2, spec, &o2, &err) == 0 && qkt_data_open(&d3, spec, &o3, &err) == 0 &&
               qkt_data_open(&d7, spec, &o7, &err) == 0 && qkt_data_open(&fresh2, spec, &o2, &err) == 0,
           "%s: %s", spec, err.msg);
    static batch v2, v3, v7, t2, t3, tf;
    draw(d2, QKT_SPLIT_VAL, &v2), draw(d3, QKT_SPLIT_VAL, &v3);
    EXPECT(!same(&v2, &v3), "%s: seeds 2 and 3 should draw different val sequences before the reseed", spec);
    draw(d2, QKT_SPLIT_TRAIN, &t2); /* advance train: the reseed must not touch it */
    qkt_data_seed_split(d2, QKT_SPLIT_VAL, 7);
    qkt_data_seed_split(d3, QKT_SPLIT_VAL, 7);
    draw(d2, QKT_SPLIT_VAL, &v2), draw(d3, QKT_SPLIT_VAL, &v3), draw(d7, QKT_SPLIT_VAL, &v7);
    EXPECT(same(&v2, &v3) && same(&v2, &v7), "%s: val of seeds 2 and 3 reseeded with 7 is not seed 7's val", spec);
    qkt_data_reset(d3, QKT_SPLIT_VAL);
    draw(d3, QKT_SPLIT_VAL, &v3);
    EXPECT(same(&v3, &v7), "%s: qkt_data_reset does not return to the reseeded stream", spec);
    draw(d2, QKT_SPLIT_TRAIN, &t2), draw(d3, QKT_SPLIT_TRAIN, &t3);
    draw(fresh2, QKT_SPLIT_TRAIN, &tf), draw(fresh2, QKT_SPLIT_TRAIN, &tf); /* the second train batch of seed 2 */
    EXPECT(same(&t2, &tf), "%s: the val reseed moved the train stream", spec);
    EXPECT(!same(&t2, &t3), "%s: train streams of seeds 2 and 3 should stay different", spec);
    qkt_data_free(d2), qkt_data_free(d3), qkt_data_free(d7), qkt_data_free(fresh2);
}

int main(void) {
    check("induction");
    check("mqar");
    const char *src = getenv("QKT_SOURCE_DIR");
    char text[1024];
    snprintf(text, sizeof text, "text:%s/data/corpora/tinyshakespeare.txt", src ? src : ".");
    check(text);
    return qkt_test_finish();
}
