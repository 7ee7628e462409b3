/* text_escape.c - JSON string and XML text escaping for the writers
 * (speedscope, SVG) and the CLI's JSON; valid UTF-8 passes through. */
#include <stdio.h>

#include "profile/writers.h"
#include "stacksnap.h"

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 when the
 * bytes there are not one (a stray continuation byte, a sequence cut
 * short, an overlong form, a surrogate, beyond U+10FFFF). */
static int utf8_len(const unsigned char *s)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	int n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

void stacksnap_json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*s) {
		int n = utf8_len(s);

		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else if (n)
			fwrite(s, 1, (size_t)n, f);
		else
			fputs("\\ufffd", f);
		s += n ? n : 1;
	}
	fputc('"', f);
}

void json_string(FILE *f, const char *s)
{
	stacksnap_json_string(f, s ? s : "");
}

void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if ((unsigned char)*s < 0x20)
				fputc(' ', f);
			else
				fputc(*s, f);
		}
	}
}
