/*
 * sha256.h: SHA-256 (FIPS 180-4), used to name and identify batch files:
 * the ledger and the batch metadata carry the file's digest, so a file is
 * never submitted twice.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SHA256_H
#define QB_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t	h[8];
	uint64_t	nbytes;
	unsigned char	blk[64];
	size_t		nblk;
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *p, size_t n);
/* Finish; hex receives 64 lowercase hex digits and a NUL. */
void sha256_hex(struct sha256 *c, char hex[65]);
/* Digest of a whole file; returns 0, or -1 with errno set. */
int sha256_file(const char *path, char hex[65]);

#endif
