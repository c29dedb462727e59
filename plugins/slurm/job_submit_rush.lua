--[[
job_submit_rush.lua: record rush's per-job inputs at submit time.

Users opt in through the job comment:

    sbatch --comment=rush:idempotent ...                  # may be killed and requeued
    sbatch --comment=rush:idempotent,app=lammps,wtype=network ...
    sbatch --comment=rush:wtype=io ...                    # workload type only

Keys: idempotent (flag), speculative (flag: rush may run the job under shorter limits learnt
from its application's past runs, requeuing it with the next one when it hits one), app
(application label, [A-Za-z0-9._-]), wtype (one of compute, network, io, memory, mixed). The plugin writes them to the job's admin_comment
as "rush:idempotent=1;app=lammps;wtype=network" (app defaults to the job name), where the
rush daemon reads them. A malformed rush option rejects the submission with a message
that says how to fix it; so does a rush comment over 1024 characters or a key given twice
(parsing is linear, without backtracking patterns: see plugins/slurm/README.md). The plugin never talks to the rush daemon, so submissions work
whether the daemon runs or not; jobs without a rush comment pass through untouched.

On modification (`scontrol update JobId=N Comment=rush:...`) the new comment re-declares
the user's keys; the daemon's own keys in admin_comment (class, requeues, attempt) are kept. A
rejected modification cannot show its message (Slurm only forwards log_user at submit):
scontrol reports an error and slurmctld's log says why.
Install: copy this file as job_submit.lua next to slurm.conf, set JobSubmitPlugins=lua.
--]]

local WTYPES = { compute = true, network = true, io = true, memory = true, mixed = true }

-- Slurm stores at most this many characters of a comment; the plugin runs before Slurm
-- checks, so it bounds the input itself: every step below is linear in a bounded string.
local MAX_COMMENT = 1024
local SHOWN = 60 -- characters of a bad item quoted back to the user

-- No Lua patterns with quantifiers on user input: a pattern such as
-- "^%s*(.-)%s*$" backtracks quadratically on a long run of blanks (a slurmctld DoS).
-- Only plain string.find and byte loops are used.
local function is_blank(b)
	return b == 32 or (b >= 9 and b <= 13) -- space, \t \n \v \f \r
end

local function trim(s)
	local first, last = 1, #s
	while first <= last and is_blank(string.byte(s, first)) do
		first = first + 1
	end
	while last >= first and is_blank(string.byte(s, last)) do
		last = last - 1
	end
	return string.sub(s, first, last)
end

local function is_alnum(b)
	return (b >= 48 and b <= 57) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122)
end

-- Every byte of s is a letter, digit or one of the bytes in `extra` (ASCII only).
local function only(s, extra)
	if #s == 0 then
		return false
	end
	for i = 1, #s do
		local b = string.byte(s, i)
		if not is_alnum(b) and not string.find(extra, string.char(b), 1, true) then
			return false
		end
	end
	return true
end

-- A bounded, printable copy of user text for messages and logs (NUL, control bytes and
-- non-ASCII become '?').
local function shown(s)
	local out = {}
	for i = 1, math.min(#s, SHOWN) do
		local b = string.byte(s, i)
		out[i] = (b >= 32 and b < 127) and string.char(b) or "?"
	end
	local text = table.concat(out)
	if #s > SHOWN then
		text = text .. "...(" .. #s .. " characters)"
	end
	return text
end

-- Split s on the plain separator sep; calls fn(item) for each piece (empty ones included).
local function each_item(s, sep, fn)
	local pos = 1
	while true do
		local at = string.find(s, sep, pos, true)
		local err = fn(string.sub(s, pos, (at or (#s + 1)) - 1))
		if err ~= nil then
			return err
		end
		if at == nil then
			return nil
		end
		pos = at + 1
	end
end

local function parse_rush_comment(comment)
	if type(comment) ~= "string" or string.sub(comment, 1, 5) ~= "rush:" then
		return nil, nil
	end
	if #comment > MAX_COMMENT then
		return nil,
			"the comment is " .. #comment .. " characters, more than Slurm's limit of " .. MAX_COMMENT
				.. " (give only the rush keys)"
	end
	local tags = {}
	local err = each_item(string.sub(comment, 6), ",", function(raw)
		local item = trim(raw)
		if item == "" then
			return nil -- "rush:idempotent," and "a,,b": empty items are ignored
		end
		local key, value
		local eq = string.find(item, "=", 1, true)
		if eq == nil then
			key, value = item, "1"
		else
			key, value = trim(string.sub(item, 1, eq - 1)), trim(string.sub(item, eq + 1))
		end
		if key == "" then
			return "'" .. shown(item) .. "' has no key before '='"
		elseif not only(key, "_") then
			return "cannot read '" .. shown(item) .. "' (keys are idempotent, speculative, app, wtype)"
		elseif tags[key] ~= nil then
			return "key '" .. key .. "' is given twice"
		elseif key == "idempotent" then
			if value ~= "1" and value ~= "yes" and value ~= "true" then
				return "idempotent takes no value (write rush:idempotent)"
			end
			tags.idempotent = "1"
		elseif key == "speculative" then
			if value ~= "1" and value ~= "yes" and value ~= "true" then
				return "speculative takes no value (write rush:speculative)"
			end
			tags.speculative = "1"
		elseif key == "app" then
			if not only(value, "._-") then
				return "app must be letters, digits, '.', '_' or '-'"
			end
			tags.app = value
		elseif key == "wtype" then
			if not WTYPES[value] then
				return "wtype must be one of compute, network, io, memory, mixed"
			end
			tags.wtype = value
		else
			return "unknown key '" .. key .. "' (use idempotent, speculative, app, wtype)"
		end
		return nil
	end)
	if err ~= nil then
		return nil, err
	end
	return tags, nil
end

-- The job name as an application label: bytes outside [A-Za-z0-9._-] become '_', at most
-- MAX_LABEL bytes; nil for no name.
local MAX_LABEL = 128

local function app_label(job_name)
	if type(job_name) ~= "string" or job_name == "" then
		return nil
	end
	local out = {}
	for i = 1, math.min(#job_name, MAX_LABEL) do
		local b = string.byte(job_name, i)
		out[i] = (is_alnum(b) or b == 46 or b == 95 or b == 45) and string.char(b) or "_"
	end
	return table.concat(out)
end

-- Tags rush itself manages (set by the daemon through scontrol, kept across user edits).
local DAEMON_KEYS = { "class", "requeues", "attempt" }

local function existing_tags(admin)
	local tags = {}
	if type(admin) ~= "string" or string.sub(admin, 1, 5) ~= "rush:" then
		return tags
	end
	each_item(string.sub(admin, 6), ";", function(item)
		local eq = string.find(item, "=", 1, true)
		if eq ~= nil and only(string.sub(item, 1, eq - 1), "_") then
			tags[string.sub(item, 1, eq - 1)] = string.sub(item, eq + 1)
		end
		return nil
	end)
	return tags
end

local function admin_comment(tags)
	local parts = {}
	for _, key in ipairs({ "idempotent", "speculative", "app", "wtype", "class", "requeues", "attempt" }) do
		if tags[key] ~= nil then
			table.insert(parts, key .. "=" .. tags[key])
		end
	end
	return "rush:" .. table.concat(parts, ";")
end

-- Returns slurm.SUCCESS or slurm.ERROR; sets job_desc.admin_comment for a rush comment.
-- job_name: the job's name (application label by default); old_admin: the job's current
-- admin_comment on modification, whose daemon-managed tags are kept.
local function apply(job_desc, comment, job_name, old_admin)
	local tags, err = parse_rush_comment(comment)
	if err ~= nil then
		slurm.log_user(
			"rush: invalid --comment '%s': %s. Example: --comment=rush:idempotent,app=lammps,wtype=network",
			shown(comment),
			err
		)
		slurm.log_info("rush: rejected comment '%s': %s", shown(comment), err)
		return slurm.ERROR
	end
	if tags ~= nil then
		if tags.app == nil then
			tags.app = app_label(job_name)
		end
		local old = existing_tags(old_admin)
		for _, key in ipairs(DAEMON_KEYS) do
			tags[key] = old[key]
		end
		job_desc.admin_comment = admin_comment(tags)
		slurm.log_debug("rush: tagged job %s: %s", tostring(job_name), job_desc.admin_comment)
	end
	return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	return apply(job_desc, job_desc.comment, job_desc.name, nil)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	-- Only a new comment re-declares the user's keys; admin_comment updates (the daemon's
	-- requeue tags) and every other modification pass through untouched.
	if job_desc.comment ~= nil then
		return apply(job_desc, job_desc.comment, job_desc.name or job_rec.name, job_rec.admin_comment)
	end
	return slurm.SUCCESS
end

return slurm.SUCCESS
