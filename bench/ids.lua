-- wrk script: GET <prefix><id> with an id picked at random from a file (one per line).
-- Usage: wrk ... -s bench/ids.lua http://host:port -- '<path prefix>' <ids file>

local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("thread_no", counter)
end

local prefix = "/"
local ids = {}

function init(args)
  prefix = args[1] or "/"
  for line in io.lines(args[2]) do
    if #line > 0 then
      ids[#ids + 1] = line
    end
  end
  if #ids == 0 then
    error("no ids in " .. tostring(args[2]))
  end
  math.randomseed(os.time() * 1000 + (thread_no or 0) * 7919)
end

function request()
  return wrk.format(nil, prefix .. ids[math.random(1, #ids)])
end
