--[[
job_submit_rush.lua: record rush's per-job inputs at submit time.

Users opt in through the job comment:

    sbatch --comment=rush:idempotent ...                  # may be killed and requeued
    sbatch --comment=rush:idempotent,app=lammps,wtype=network ...
    sbatch --comment=rush:wtype=io ...                    # workload type only

Keys: idempotent (flag), app (application label, [A-Za-z0-9._-]), wtype (one of
compute, network, io, memory, mixed). The plugin writes them to the job's admin_comment
as "rush:idempotent=1;app=lammps;wtype=network" (app defaults to the job name), where the
rush daemon reads them. A malformed rush option rejects the submission with a message
that says how to fix it. The plugin never talks to the rush daemon, so submissions work
whether the daemon runs or not; jobs without a rush comment pass through untouched.

On modification (`scontrol update JobId=N Comment=rush:...`) the new comment re-declares
the user's keys; the daemon's own keys in admin_comment (class, requeues) are kept. A
rejected modification cannot show its message (Slurm only forwards log_user at submit):
scontrol reports an error and slurmctld's log says why.
Install: copy this file as job_submit.lua next to slurm.conf, set JobSubmitPlugins=lua.
--]]

local WTYPES = { compute = true, network = true, io = true, memory = true, mixed = true }

local function parse_rush_comment(comment)
	local spec = string.match(comment or "", "^rush:(.*)$")
	if spec == nil then
		return nil, nil
	end
	local tags = {}
	for item in string.gmatch(spec, "[^,]+") do
		local key, value = string.match(item, "^%s*([%w_]+)%s*=%s*(.-)%s*$")
		if key == nil then
			key = string.match(item, "^%s*([%w_]+)%s*$")
			value = "1"
		end
		if key == nil then
			return nil, "cannot read '" .. item .. "'"
		elseif key == "idempotent" then
			if value ~= "1" and value ~= "yes" and value ~= "true" then
				return nil, "idempotent takes no value (write rush:idempotent)"
			end
			tags.idempotent = "1"
		elseif key == "app" then
			if not string.match(value, "^[%w%._%-]+$") then
				return nil, "app must be letters, digits, '.', '_' or '-'"
			end
			tags.app = value
		elseif key == "wtype" then
			if not WTYPES[value] then
				return nil, "wtype must be one of compute, network, io, memory, mixed"
			end
			tags.wtype = value
		else
			return nil, "unknown key '" .. key .. "' (use idempotent, app, wtype)"
		end
	end
	return tags, nil
end

-- Tags rush itself manages (set by the daemon through scontrol, kept across user edits).
local DAEMON_KEYS = { "class", "requeues" }

local function existing_tags(admin)
	local tags = {}
	local spec = string.match(admin or "", "^rush:(.*)$")
	for item in string.gmatch(spec or "", "[^;]+") do
		local key, value = string.match(item, "^([%w_]+)=(.*)$")
		if key ~= nil then
			tags[key] = value
		end
	end
	return tags
end

local function admin_comment(tags)
	local parts = {}
	for _, key in ipairs({ "idempotent", "app", "wtype", "class", "requeues" }) do
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
			comment,
			err
		)
		slurm.log_info("rush: rejected comment '%s': %s", comment, err)
		return slurm.ERROR
	end
	if tags ~= nil then
		if tags.app == nil and job_name ~= nil then
			tags.app = string.gsub(job_name, "[^%w%._%-]", "_")
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
