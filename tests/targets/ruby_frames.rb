# ruby_frames.rb - a Ruby target for tests/integration/ruby_frames: threads
# blocked in known call chains, each recording its own stack with
# caller_locations just before it blocks. Prints one JSON line per thread
# (name, native tid, frames innermost first: label, path, line) and then
# "READY" once all are blocked; exits when its stdin closes.
require 'json'

$out = Queue.new

def record(name)
  locs = caller_locations(1).map { |l| [l.label, l.path, l.lineno] }
  tid = File.read("/proc/thread-self/stat").split(" ")[0].to_i
  $out << JSON.generate({ "name" => name, "tid" => tid, "frames" => locs })
end

class Box
  def initialize(q)
    @q = q
  end

  def take
    record("queue"); @q.pop
  end
end

def sleeper_inner
  record("sleep"); sleep
end

def sleeper
  sleeper_inner
end

def pipe_c(r)
  record("pipe"); r.read(1)
end

def pipe_b(r)
  pipe_c(r)
end

def pipe_a(r)
  pipe_b(r)
end

LOCK = Mutex.new

def locker
  record("mutex"); LOCK.lock
end

q = Queue.new
rd, wr = IO.pipe
LOCK.lock
threads = []
threads << Thread.new { sleeper }
threads << Thread.new { Box.new(q).take }
threads << Thread.new { pipe_a(rd) }
threads << Thread.new {
  locker
}
4.times { puts $out.pop }
# Wait until every thread is blocked.
until threads.all? { |t| t.status == "sleep" }
  Thread.pass
end
def main_wait
  record("main"); puts $out.pop; puts "READY"; $stdout.flush; $stdin.read
end
main_wait
