/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as iSCSI, ext4 and
 * safetensors-adjacent tools use it: table-driven, slicing by 8 (~1-2 GB/s), with
 * the tables built once. API: qkt_io.h. */
#include <pthread.h>
#include <string.h>

#include "qkt_io.h"

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[0][i] = c;
    }
    for (int s = 1; s < 8; s++)
        for (int i = 0; i < 256; i++) table[s][i] = (table[s - 1][i] >> 8) ^ table[0][table[s - 1][i] & 0xff];
}

uint32_t qkt_crc32c(uint32_t crc, const void *buf, size_t n) {
    pthread_once(&table_once, build_table);
    const uint8_t *p = buf;
    crc = ~crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4), memcpy(&hi, p + 4, 4); /* little-endian host (safetensors.c asserts it) */
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
              table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
    }
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}
