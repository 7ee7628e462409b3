/* fuzz_elf.c - libFuzzer target: arbitrary bytes as an ELF image, then
 * everything unwinding and symbolization read from it. */
#include <stddef.h>
#include <stdint.h>

#include "elf/elf_image.h"
#include "symbolize/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_image *img = NULL, *mini = NULL;
	const struct elf_image *imgs[2];
	struct symtab *st = NULL;
	struct line_info *li = NULL;
	volatile uint64_t sink = 0;
	uint64_t bias, start;

	if (elf_image__open_mem(data, size, "fuzz", NULL, &img) != 0)
		return 0;
	/* Touch every section the unwinder reads, so ASan sees overreads. */
	{
		const struct elf_section *secs[] = {
			&img->eh_frame, &img->eh_frame_hdr, &img->debug_frame,
			&img->text, &img->plt, &img->plt_sec, &img->plt_got,
			&img->gnu_debugdata,
		};

		for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++)
			if (secs[i]->size)
				sink += secs[i]->data[0] + secs[i]->data[secs[i]->size - 1];
	}
	for (size_t i = 0; i < img->build_id_len; i++)
		sink += img->build_id[i];
	for (size_t i = 0; i < img->nsegs; i++) {
		if (elf_image__load_bias(img, 0x7f0000000000ull, img->segs[i].offset, 0, &bias) == 0)
			sink += bias;
	}
	elf_image__open_minidebug(img, NULL, &mini);
	imgs[0] = img;
	imgs[1] = mini;
	if (symtab__build(imgs, 2, NULL, &st) == 0) {
		for (size_t i = 0; i < img->nsegs && i < 4; i++) {
			uint64_t a = img->segs[i].vaddr;

			for (int k = 0; k < 16; k++) {
				const char *n = symtab__lookup(st, a + (uint64_t)k * 13, 0, &start);

				if (n)
					sink += (uint8_t)n[0];
			}
		}
	}
	line_info__open(img, NULL, &li);
	if (li) {
		struct stacksnap_sym out[8];
		uint64_t a = img->text.vaddr ? img->text.vaddr : 0x1000;

		for (int k = 0; k < 4; k++)
			symbolize__lookup(st, li, a + (uint64_t)k * 17, 0, out, 8);
	}
	line_info__free(li);
	symtab__free(st);
	elf_image__free(mini);
	elf_image__free(img);
	(void)sink;
	return 0;
}
