/*
 * rfc3339.h: read RFC 3339 timestamps ("2026-11-30T16:00:00Z",
 * "2024-08-20T18:37:24.100435+02:00"), as Anthropic, Azure and older
 * OpenAI-compatible hosts give them (qb-providers(7), ANTHROPIC
 * "The message batch" and AZURE OPENAI).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_RFC3339_H
#define QB_RFC3339_H

/*
 * Parse the whole string s as an RFC 3339 date-time (separator T, t or a
 * space; fraction optional; Z, z or a numeric offset) into *t, unix
 * seconds, the fraction dropped. Returns 0, or -1 if s is not one.
 */
int rfc3339_parse(const char *s, long long *t);

#endif
