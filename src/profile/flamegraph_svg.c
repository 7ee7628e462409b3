/* flamegraph_svg.c - writes aggregated stacks as an interactive flame graph
 * (SVG with its own script): hover shows a frame's name, samples and
 * percentage; a click zooms into it; search highlights frames whose names
 * match a regular expression and sums their samples (nested matches counted
 * once); colours by module or by kind; and a differential graph against a
 * base profile (red: grew, blue: shrank). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stacks.h"
#include "profile/writers.h"

#define FRAME_H 16	/* pixels per stack level */
#define PAD_X 10
#define PAD_TOP 50	/* title, controls */
#define PAD_BOTTOM 30	/* details line */
#define FONT 12
#define CHAR_W (FONT * 0.59) /* Verdana's average advance */
#define MIN_W 0.1	/* narrower frames are not drawn (nor their children) */

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; s && *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static const char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	return b ? b + 1 : path;
}

/* The fill of a frame: HSL chosen by module (a hue per module), by kind,
 * or by difference from the base. */
static void fill_for(char *buf, size_t len, const struct mnode *m,
		     const struct stacksnap_stacks_write_opts *o, double share,
		     double base_share, double max_delta)
{
	const struct sframe *f = m->frame;
	uint32_t h = hash_str(f ? f->disp : "all");
	int vary = (int)(h % 20);

	if (!f) {
		snprintf(buf, len, "hsl(0,0%%,80%%)");
	} else if (o->base) {
		double d = share - base_share;
		int light = max_delta > 0 ? 95 - (int)(45 * fabs(d) / max_delta) : 95;

		snprintf(buf, len, "hsl(%d,80%%,%d%%)", d > 0 ? 0 : d < 0 ? 220 : 0,
			 d == 0 ? 95 : light);
	} else if (f->kind == STACKSNAP_KIND_ROOT) {
		snprintf(buf, len, "hsl(270,25%%,%d%%)", 70 + vary / 2);
	} else if (f->kind == STACKSNAP_KIND_UNKNOWN || (!f->name && !f->module &&
							  f->kind != STACKSNAP_KIND_KERNEL)) {
		snprintf(buf, len, "hsl(0,0%%,%d%%)", 65 + vary / 2);
	} else if (o->colors == STACKSNAP_COLOR_KIND) {
		if (f->kind == STACKSNAP_KIND_KERNEL)
			snprintf(buf, len, "hsl(30,85%%,%d%%)", 55 + vary / 2);
		else
			snprintf(buf, len, "hsl(%d,75%%,%d%%)", 5 + vary, 60 + vary / 2);
	} else {
		const char *mod = f->kind == STACKSNAP_KIND_KERNEL ? "[kernel]"
				  : base_name(f->module);
		uint32_t hm = hash_str(mod ? mod : "?");

		snprintf(buf, len, "hsl(%u,%u%%,%d%%)", hm % 360, 55 + hm / 360 % 30,
			 62 + vary / 2);
	}
}

/* The label drawn in a frame w pixels wide: the name, cut with ".." to
 * fit, or nothing under three characters. */
static void label_for(FILE *f, const char *name, double w)
{
	size_t fit = (size_t)((w - 6) / CHAR_W), n = strlen(name);
	char tmp[512];

	if (fit < 3)
		return;
	if (n <= fit) {
		xml_text(f, name);
		return;
	}
	if (fit - 2 >= sizeof(tmp))
		fit = sizeof(tmp) - 1;
	memcpy(tmp, name, fit - 2);
	strcpy(tmp + fit - 2, "..");
	xml_text(f, tmp);
}

/* The script: written for this file (FlameGraph's behaviours, not its
 * code). Frames are <g class="f"> with data-x/-w (layout at full view),
 * data-d (depth), data-n (samples), data-name. */
static const char script[] =
"<script type=\"text/ecmascript\"><![CDATA[\n"
"'use strict';\n"
"var svg, details, matchedtxt, total, W, PADX, CHARW, frames = [], zoomed = null;\n"
"function init() {\n"
"  svg = document.documentElement;\n"
"  details = document.getElementById('details').firstChild;\n"
"  matchedtxt = document.getElementById('matched');\n"
"  W = +svg.getAttribute('data-width'); PADX = +svg.getAttribute('data-padx');\n"
"  CHARW = +svg.getAttribute('data-charw');\n"
"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
"  total = +frames[0].getAttribute('data-n');\n"
"  frames.forEach(function (g) {\n"
"    g.addEventListener('mouseover', function () { details.nodeValue = g.querySelector('title').textContent; });\n"
"    g.addEventListener('mouseout', function () { details.nodeValue = ' '; });\n"
"    g.addEventListener('click', function () { zoom(g); });\n"
"  });\n"
"  document.getElementById('unzoom').addEventListener('click', function () { zoom(frames[0]); });\n"
"  document.getElementById('search').addEventListener('click', function () { ask(); });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); ask(); }\n"
"    if (e.key === 'Escape') { search(''); }\n"
"  });\n"
"}\n"
"function fit(g, w) {\n"
"  var t = g.querySelector('text'), name = g.getAttribute('data-name');\n"
"  var n = Math.floor((w - 6) / CHARW);\n"
"  t.textContent = n < 3 ? '' : name.length <= n ? name : name.substring(0, n - 2) + '..';\n"
"}\n"
"function place(g, x, w) {\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
"  t.setAttribute('x', (x + 3).toFixed(2)); fit(g, w);\n"
"}\n"
"/* Zooms so that frame z spans the width: its descendants scale with it,\n"
"   its ancestors span the width faded, everything else is hidden. */\n"
"function zoom(z) {\n"
"  var zx = +z.getAttribute('data-x'), zw = +z.getAttribute('data-w'), zd = +z.getAttribute('data-d');\n"
"  var scale = (W - 2 * PADX) / zw;\n"
"  zoomed = z === frames[0] ? null : z;\n"
"  frames.forEach(function (g) {\n"
"    var x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w'), d = +g.getAttribute('data-d');\n"
"    var inside = x >= zx - 1e-6 && x + w <= zx + zw + 1e-6;\n"
"    var above = x <= zx + 1e-6 && x + w >= zx + zw - 1e-6 && d < zd;\n"
"    g.classList.remove('hide', 'parent');\n"
"    if (d >= zd && inside) place(g, PADX + (x - zx) * scale, w * scale);\n"
"    else if (above) { g.classList.add('parent'); place(g, PADX, W - 2 * PADX); }\n"
"    else { g.classList.add('hide'); }\n"
"  });\n"
"  document.getElementById('unzoom').classList.toggle('hide', !zoomed);\n"
"}\n"
"function ask() {\n"
"  var term = window.prompt('Search for a regular expression', '');\n"
"  if (term !== null) search(term);\n"
"}\n"
"/* Highlights frames whose name matches re and shows the share of samples\n"
"   under them, counting a match inside another match once. Returns it. */\n"
"function search(term) {\n"
"  var re = null, ranges = [], sum = 0, end = -1;\n"
"  if (term) { try { re = new RegExp(term); } catch (e) { matchedtxt.textContent = 'bad regular expression'; return -1; } }\n"
"  frames.forEach(function (g, i) {\n"
"    var hit = re && i > 0 && re.test(g.getAttribute('data-name'));\n"
"    var r = g.querySelector('rect');\n"
"    if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
"    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
"    if (hit) ranges.push([+g.getAttribute('data-left'), +g.getAttribute('data-n')]);\n"
"  });\n"
"  ranges.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
"  ranges.forEach(function (r) { if (r[0] >= end) { sum += r[1]; end = r[0] + r[1]; } });\n"
"  matchedtxt.textContent = re ? 'Matched: ' + sum + ' ' + matchedtxt.getAttribute('data-unit') + ' (' + (100 * sum / total).toFixed(1) + '%)' : '';\n"
"  matchedtxt.setAttribute('data-samples', re ? sum : 0);\n"
"  return sum;\n"
"}\n"
"]]></script>\n";

int flamegraph_svg_write(const struct stacksnap_stacks *st, FILE *f,
			 const struct stacksnap_stacks_write_opts *o)
{
	struct mtree t;
	unsigned width = o->width ? o->width : 1200;
	double avail = width - 2.0 * PAD_X;
	uint64_t *left;		/* samples left of each node in its level */
	double max_delta = 0;
	char fill[64];
	/* What the widths count: samples, or the unit of weighted stacks
	 * (nanoseconds waited off the CPU). */
	const char *unit = strcmp(st->o.sample_unit, "count") ? st->o.sample_unit : "samples";
	int err = mtree_build(&t, st, o->base);

	if (err)
		return err;
	left = calloc(t.nn, sizeof(*left));
	if (!left) {
		mtree_free(&t);
		return -ENOMEM;
	}
	/* Parents come before children: one pass lays out every level. */
	for (size_t i = 0; i < t.nn; i++) {
		uint64_t cur = left[i];

		for (uint32_t c = t.n[i].first_child; c; c = t.n[c].next_sibling) {
			left[c] = cur;
			cur += t.n[c].total;
		}
	}
	uint64_t tot = t.n[0].total ? t.n[0].total : 1;
	uint64_t btot = t.n[0].base_total ? t.n[0].base_total : 1;

	if (o->base)
		for (size_t i = 1; i < t.nn; i++) {
			double d = fabs((double)t.n[i].total / tot -
					(double)t.n[i].base_total / btot);
			if (d > max_delta && t.n[i].total)
				max_delta = d;
		}
	unsigned height = (t.max_depth + 1) * FRAME_H + PAD_TOP + PAD_BOTTOM;
	const char *title = o->title ? o->title
			    : o->base ? "Differential flame graph" : "Flame graph";

	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
		"width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" onload=\"init()\" "
		"data-width=\"%u\" data-padx=\"%d\" data-charw=\"%.3f\" "
		"data-samples=\"%" PRIu64 "\">\n",
		width, height, width, height, width, PAD_X, CHAR_W, t.n[0].total);
	fputs("<style>\n"
	      "text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
	      "g.f text { pointer-events: none; }\n"
	      "g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
	      ".hide { display: none; }\n"
	      ".parent { opacity: 0.5; }\n"
	      "#title { font-size: 17px; text-anchor: middle; }\n"
	      "#unzoom, #search { cursor: pointer; fill: #036; }\n"
	      "</style>\n", f);
	fputs(script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f6f6ee\"/>\n",
		width, height);
	fprintf(f, "<text id=\"title\" x=\"%u\" y=\"24\">", width / 2);
	xml_text(f, title);
	fprintf(f, "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%u\" y=\"24\" text-anchor=\"end\">Search</text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\" data-unit=\"%s\">"
		"</text>\n<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n",
		PAD_X, width - PAD_X, width - PAD_X, height - 10, unit, PAD_X, height - 10);
	for (size_t i = 0; i < t.nn; i++) {
		const struct mnode *m = &t.n[i];
		double x = PAD_X + avail * (double)left[i] / tot;
		double w = avail * (double)m->total / tot;
		double y = height - PAD_BOTTOM - (m->depth + 1.0) * FRAME_H;
		const char *name = m->frame ? m->frame->disp : "all";

		/* A child is never wider than its parent: skipping narrow
		 * frames skips their children too. */
		if (!m->total || w < MIN_W)
			continue;
		fill_for(fill, sizeof(fill), m, o, (double)m->total / tot,
			 (double)m->base_total / btot, max_delta);
		fprintf(f, "<g class=\"f\" data-n=\"%" PRIu64 "\" data-left=\"%" PRIu64
			"\" data-x=\"%.4f\" data-w=\"%.4f\" data-d=\"%u\" data-name=\"",
			m->total, left[i], x, w, m->depth);
		xml_text(f, name);
		fputs("\"><title>", f);
		xml_text(f, name);
		if (m->frame && m->frame->module && m->frame->kind != STACKSNAP_KIND_KERNEL) {
			fputs(" [", f);
			xml_text(f, base_name(m->frame->module));
			fputc(']', f);
		}
		fprintf(f, " (%" PRIu64 " %s, %.2f%%", m->total, unit, 100.0 * m->total / tot);
		if (o->base)
			fprintf(f, "; base %" PRIu64 " %s, %.2f%%; %+.2f%%",
				m->base_total, unit, 100.0 * m->base_total / btot,
				100.0 * ((double)m->total / tot - (double)m->base_total / btot));
		fprintf(f, ")</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
			"fill=\"%s\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
			x, y, w, FRAME_H - 1, fill, x + 3, y + FRAME_H - 4.5);
		label_for(f, name, w);
		fputs("</text></g>\n", f);
	}
	fputs("</svg>\n", f);
	free(left);
	mtree_free(&t);
	return 0;
}
