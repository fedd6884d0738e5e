/*
 * sha256.c: SHA-256 after FIPS 180-4 section 6.2.
 * SPDX-License-Identifier: ISC
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sha256.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_SHANI_CODE 1
#endif

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

#define ROR(x, n)	(((x) >> (n)) | ((x) << (32 - (n))))

static void
block_c(uint32_t *st, const unsigned char *p)
{
	uint32_t w[64], a, b, d, e, f, g, h, cc, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		    (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10)) +
		    w[i - 7] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^
		    (w[i - 15] >> 3)) + w[i - 16];
	a = st[0]; b = st[1]; cc = st[2]; d = st[3];
	e = st[4]; f = st[5]; g = st[6]; h = st[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) +
		    ((e & f) ^ (~e & g)) + K[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) +
		    ((a & b) ^ (a & cc) ^ (b & cc));
		h = g; g = f; f = e; e = d + t1;
		d = cc; cc = b; b = a; a = t1 + t2;
	}
	st[0] += a; st[1] += b; st[2] += cc; st[3] += d;
	st[4] += e; st[5] += f; st[6] += g; st[7] += h;
}

#ifdef HAVE_SHANI_CODE
/*
 * The same compression with the x86 SHA extensions (Intel SHA-NI), about
 * ten times faster: batch files are hundreds of megabytes and qb-pack
 * hashes every byte it writes. Lanes hold the state as ABEF and CDGH.
 */
__attribute__((target("sha,sse4.1")))
static void
blocks_shani(uint32_t *st, const unsigned char *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL,
	    0x0405060700010203ULL);
	__m128i s0, s1, t, m, w[4], abef, cdgh;
	int i;

	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[0]), 0xb1);
	s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[4]), 0x1b);
	s0 = _mm_alignr_epi8(t, s1, 8);
	s1 = _mm_blend_epi16(s1, t, 0xf0);
	for (; n > 0; n--, p += 64) {
		abef = s0;
		cdgh = s1;
		for (i = 0; i < 4; i++)
			w[i] = _mm_shuffle_epi8(_mm_loadu_si128(
			    (const __m128i *)(p + 16 * i)), bswap);
#pragma GCC unroll 16
		for (i = 0; i < 16; i++) {
			m = _mm_add_epi32(w[i & 3],
			    _mm_loadu_si128((const __m128i *)&K[4 * i]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, m);
			if (i >= 3 && i <= 14) {
				t = _mm_alignr_epi8(w[i & 3], w[(i - 1) & 3], 4);
				w[(i + 1) & 3] = _mm_add_epi32(w[(i + 1) & 3], t);
				w[(i + 1) & 3] = _mm_sha256msg2_epu32(w[(i + 1) & 3],
				    w[i & 3]);
			}
			m = _mm_shuffle_epi32(m, 0x0e);
			s0 = _mm_sha256rnds2_epu32(s0, s1, m);
			if (i >= 1 && i <= 12)
				w[(i - 1) & 3] = _mm_sha256msg1_epu32(w[(i - 1) & 3],
				    w[i & 3]);
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	t = _mm_shuffle_epi32(s0, 0x1b);
	s1 = _mm_shuffle_epi32(s1, 0xb1);
	s0 = _mm_blend_epi16(t, s1, 0xf0);
	s1 = _mm_alignr_epi8(s1, t, 8);
	_mm_storeu_si128((__m128i *)&st[0], s0);
	_mm_storeu_si128((__m128i *)&st[4], s1);
}

static int
have_shani(void)
{
	static int known = -1;
	unsigned a, b, c, d;

	if (known < 0) {
		known = 0;
		/* CPUID leaf 7: EBX bit 29 is SHA; SSE4.1 is leaf 1 ECX bit 19. */
		if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1) &&
		    __get_cpuid(1, &a, &b, &c, &d) && (c >> 19 & 1))
			known = 1;
		if (getenv("QB_NO_SHANI") != NULL)
			known = 0;
	}
	return known;
}
#endif

/* Compress n 64-byte blocks at p into the state. */
static void
blocks(struct sha256 *c, const unsigned char *p, size_t n)
{
#ifdef HAVE_SHANI_CODE
	if (have_shani()) {
		blocks_shani(c->h, p, n);
		return;
	}
#endif
	for (; n > 0; n--, p += 64)
		block_c(c->h, p);
}

void
sha256_init(struct sha256 *c)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
	};

	memcpy(c->h, iv, sizeof(iv));
	c->nbytes = 0;
	c->nblk = 0;
}

void
sha256_update(struct sha256 *c, const void *vp, size_t n)
{
	const unsigned char *p = vp;
	size_t k;

	c->nbytes += n;
	if (c->nblk > 0) {
		k = 64 - c->nblk < n ? 64 - c->nblk : n;
		memcpy(c->blk + c->nblk, p, k);
		c->nblk += k;
		p += k;
		n -= k;
		if (c->nblk < 64)
			return;
		blocks(c, c->blk, 1);
		c->nblk = 0;
	}
	blocks(c, p, n / 64);
	p += n / 64 * 64;
	n %= 64;
	memcpy(c->blk, p, n);
	c->nblk = n;
}

void
sha256_hex(struct sha256 *c, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	uint64_t bits = c->nbytes * 8;
	unsigned char pad[72];
	size_t npad;
	int i;

	npad = (c->nblk < 56 ? 56 : 120) - c->nblk;
	memset(pad, 0, sizeof(pad));
	pad[0] = 0x80;
	for (i = 0; i < 8; i++)
		pad[npad + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(c, pad, npad + 8);
	for (i = 0; i < 32; i++) {
		unsigned char byte = (unsigned char)(c->h[i / 4] >> (24 - 8 * (i % 4)));

		hex[2 * i] = digits[byte >> 4];
		hex[2 * i + 1] = digits[byte & 15];
	}
	hex[64] = '\0';
}

int
sha256_file(const char *path, char hex[65])
{
	struct sha256 c;
	unsigned char b[65536];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	sha256_init(&c);
	while ((n = read(fd, b, sizeof(b))) > 0)
		sha256_update(&c, b, (size_t)n);
	close(fd);
	if (n < 0)
		return -1;
	sha256_hex(&c, hex);
	return 0;
}
