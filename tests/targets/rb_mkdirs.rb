# rb_mkdirs.rb DIR OUT - makes directories in DIR from known call chains
# (one through a C method that yields, Array#each), each recording its own
# stack (caller_locations(0): label, path, line) on the line of its
# Dir.mkdir; writes one JSON line per mkdir, in order, to OUT. Used by
# tests/integration/ruby_profile (each mkdir's trace event must carry the
# record's frames under the C method `mkdir`). Sleeps 0.5 s before its first mkdir, 1 s before its exit.
require 'json'

$recs = []

def make(dir)
  $recs << caller_locations(0).map { |l| [l.label, l.path, l.lineno] }; Dir.mkdir(dir)
end

class Maker
  def initialize(base)
    @base = base
  end

  def deep(n)
    n.zero? ? make("#{@base}/deep") : deep(n - 1)
  end

  def each_one
    %w[a b].each { |x| make("#{@base}/#{x}") }
  end
end

# The trace finds the VM after the exec by looking again every 20 ms
# (docs/ruby.md): events before that carry native frames only.
sleep 0.5
base = ARGV[0]
make("#{base}/top")
m = Maker.new(base)
m.deep(3)
m.each_one
File.write(ARGV[1], $recs.map { |r| JSON.generate(r) + "\n" }.join)
# The trace names the frames from the live VM: a VM torn down at exit
# has freed its iseqs before the process is held there.
sleep 1
