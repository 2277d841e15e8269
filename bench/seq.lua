-- wrk script: GET <prefix><line> walking a file of lines (one per request), each
-- thread its own share (thread k of n takes lines k, k+n, k+2n, ...), so no line
-- is requested twice until the file runs out; then it starts again.
-- Usage: wrk ... -s bench/seq.lua http://host:port -- '<path prefix>' <file> <threads>

local counter = 0

function setup(thread)
  thread:set("thread_no", counter)
  counter = counter + 1
end

local prefix = "/"
local lines = {}
local at, step = 1, 1

function init(args)
  prefix = args[1] or "/"
  for line in io.lines(args[2]) do
    if #line > 0 then
      lines[#lines + 1] = line
    end
  end
  if #lines == 0 then
    error("no lines in " .. tostring(args[2]))
  end
  step = tonumber(args[3] or "1")
  at = 1 + (thread_no or 0)
end

function request()
  local line = lines[((at - 1) % #lines) + 1]
  at = at + step
  return wrk.format(nil, prefix .. line)
end
