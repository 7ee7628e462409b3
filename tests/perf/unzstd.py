#!/usr/bin/env python3
"""unzstd.py - rewrites a `perf record -z` recording without compression,
so that `perf script` (whose own -z reading fails in Debian's perf 6.1:
"Couldn't decompress data") can be the oracle for stacksnap reading the
compressed file. The COMPRESSED records' payloads are one zstd stream
(decompressed by the zstd command, not by stacksnap's code); the records
it holds replace them, perf's other records before the first compressed
one are kept, later round ends dropped (perf script then sorts the whole
file by time, the order rounds give). Feature sections after the data
move with it. Usage: unzstd.py IN OUT"""
import struct
import subprocess
import sys

PERF_RECORD_COMPRESSED = 81

d = open(sys.argv[1], 'rb').read()
if d[:8] != b'PERFILE2':
    sys.exit('unzstd.py: not a perf.data file')
doff, dsize = struct.unpack_from('<QQ', d, 40)
feats = struct.unpack_from('<4Q', d, 72)
off, end, head, stream, seen = doff, doff + dsize, b'', [], False
while off + 8 <= end:
    t, _, s = struct.unpack_from('<IHH', d, off)
    if s < 8:
        sys.exit('unzstd.py: record of size %d at %#x' % (s, off))
    if t == PERF_RECORD_COMPRESSED:
        stream.append(d[off + 8:off + s])
        seen = True
    elif not seen:
        head += d[off:off + s]
    off += s
p = subprocess.run(['zstd', '-d', '-c', '-q'], input=b''.join(stream), capture_output=True)
# The last frame of a recording stopped by the end of the workload may be
# unterminated: zstd says "premature end" after writing what it decoded.
body = p.stdout
# Keep whole records only: a stream cut short may end inside one.
o = 0
while o + 8 <= len(body):
    s = struct.unpack_from('<H', body, o + 6)[0]
    if s < 8 or o + s > len(body):
        break
    o += s
body = body[:o]
data = head + body
delta = len(data) - dsize
out = bytearray(d[:doff] + data + d[end:])
struct.pack_into('<Q', out, 48, len(data))
# The feature section table follows the data: (offset, size) per feature bit.
nfeat = sum(bin(f).count('1') for f in feats)
tab = doff + len(data)
for i in range(nfeat):
    o, sz = struct.unpack_from('<QQ', out, tab + 16 * i)
    struct.pack_into('<Q', out, tab + 16 * i, o + delta)
open(sys.argv[2], 'wb').write(out)
