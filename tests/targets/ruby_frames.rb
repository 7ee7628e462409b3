# ruby_frames.rb - a Ruby target for tests/integration/ruby_frames: threads
# blocked in known call chains (one through a C method that yields,
# Integer#times), each recording its own stack with
# caller_locations just before it blocks. Prints one JSON line per thread
# (name, native tid, frames innermost first: label, path, line), then once
# all are blocked one line per thread with its Thread#backtrace_locations
# (name, "blocked": frames with the C method it blocks in, as Ruby's own
# backtrace shows it, at its caller's path and line), and then "READY";
# exits when its stdin closes.
require 'json'

$out = Queue.new

def locs(list)
  list.map { |l| [l.label, l.path, l.lineno] }
end

def record(name)
  locs = locs(caller_locations(1))
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
  1.times { sleeper_inner }
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
%w[sleep queue pipe mutex].zip(threads) do |name, t|
  puts JSON.generate({ "name" => name, "blocked" => locs(t.backtrace_locations) })
end
# The main thread's, once it blocks, from a thread of its own.
def report_main
  Thread.new do
    until Thread.main.status == "sleep"
      Thread.pass
    end
    puts JSON.generate({ "name" => "main",
                         "blocked" => locs(Thread.main.backtrace_locations) })
    puts "READY"; $stdout.flush
    sleep
  end
end
def main_wait
  record("main"); puts $out.pop; report_main; $stdin.read
end
main_wait
