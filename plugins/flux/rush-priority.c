/* rush-priority.c - a Flux jobtap priority plugin whose priorities come from rush.
 *
 * The rush daemon computes one absolute value per pending job
 * (rush.core.priority_values: 1 .. 3*2^29, larger first) and sends them in batches to
 * this plugin's RPC service; the plugin stores each value on its job and reprioritizes
 * it with the value itself (Flux priorities are uint32: no compression).
 *
 *   job-manager.rush-priority.set  {"priorities": [[id, value], ...]}
 *       -> {"set": n, "unknown": n, "not_pending": n, "ignored": [id, ...]}
 *   job-manager.rush-priority.get  {"ids": [id, ...]}
 *       -> {"priorities": [[id, value-or-null], ...], "stored": n,
 *           "default": d, "max_batch": m}
 *
 * Both are for the instance owner only (the default rolemask of jobtap services).
 * A batch holds at most max_batch entries (default 4096): a longer one is refused
 * with EINVAL, a malformed one with EPROTO, before any job is touched. Ids that are
 * unknown or inactive are ignored and counted ("unknown"), running jobs too
 * ("not_pending").
 *
 * Priority of a job, combine = "replace" (the default: rush's order is the priority):
 *   urgency 0 (held)     -> 0 (Flux's hold; rush's skip-with-limit holds this way)
 *   urgency 31 (expedite)-> 4294967295 (Flux's maximum)
 *   a rush value stored  -> that value
 *   otherwise            -> the default (1: after every ranked job, and among
 *                           unranked jobs Flux's own order, submit order);
 *                           with gate = true, 0: the job waits, unseen by the
 *                           scheduler, until rush has ranked it
 *
 * gate = true (both modes) makes every job pass through rush before the scheduler
 * sees it: a job without a rush value gets priority 0, which the job-manager treats
 * as held (it sends no alloc request to sched-simple, sched-backfill or Fluxion), until
 * the daemon sends its value. rush can then hold a job the variation model flags
 * (urgency 0) before the scheduler could start it. Expedite (urgency 31) and, in add
 * mode, the site plugin's "unavailable" pass the gate unchanged. The price: every job
 * waits for the daemon's next cycle (daemon.cycle_interval), and none starts while the
 * daemon is down.
 *
 * combine = "add" (rush beside a site priority plugin such as flux-accounting's
 * mf_priority.so, loaded BEFORE this one): job-manager calls every loaded plugin's
 * job.priority.get / job.state.priority callback in load order with ONE argument object
 * (jobtap.c: jobtap_stack_call), and OUT args are merged (json_object_update), so this
 * plugin reads the "priority" the site's plugin returned (the base) and returns
 *   base + (rush value, else the default, 0)      clamped to 4294967294
 * The base is kept per job, so a value set by RPC is applied as base + value at once;
 * the site plugin's own updates (flux account-priority-update reprioritizes every job)
 * run through the whole stack, so this plugin adds its term again. The site plugin's
 * "unavailable" (-1: association data not loaded yet) is passed on unchanged, as are
 * hold (0) and expedite. No base from an earlier plugin: the urgency is the base (what
 * Flux's .priority-default would return). Values are 0 .. 4294967294 in this mode.
 *
 * Values live in job aux data, so they are freed when the job starts or leaves
 * (job.state.run, job.state.cleanup) and when the plugin is unloaded. A job the
 * plugin meets already prioritized (plugin reload, broker restart: Flux replays the
 * job's eventlog, priority included, before job.new) keeps that priority as its
 * value, so a reload or restart changes no priority and the daemon resends nothing.
 * With combine = "add" the value adopted is that priority minus the base at the job's
 * next priority computation (exact unless the base changed in between).
 *
 * Configuration (jobtap conf, all optional):
 *   default    priority of jobs without a rush value (replace: 1 .. 4294967294, default 1;
 *              add: the term added, 0 .. 4294967294, default 0)
 *   max_batch  entries per set/get request (1 .. 100000, default 4096)
 *   combine    "replace" (default) or "add" (see above)
 *   gate       true or false (default): jobs without a rush value wait (see above)
 */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <flux/core.h>
#include <flux/jobtap.h>
#include <jansson.h>

#define PLUGIN_NAME "rush-priority"
#define AUX_VALUE "rush::priority"
#define AUX_CTX "rush::ctx"
#define DEFAULT_PRIORITY 1
#define DEFAULT_MAX_BATCH 4096
#define LIMIT_MAX_BATCH 100000
/* 0 and FLUX_JOB_PRIORITY_MAX mean "held" and "expedited": not rush values. */
#define VALUE_MIN ((json_int_t)FLUX_JOB_PRIORITY_MIN + 1)
#define VALUE_MAX ((json_int_t)FLUX_JOB_PRIORITY_MAX - 1)
/* combine = "add": 0 is a value (nothing added); the sum never reaches expedite. */
#define ADD_VALUE_MIN ((json_int_t)0)
/* A plugin's "unavailable" priority (flux-core's job-manager/jobtap.h, not installed). */
#define PRIORITY_UNAVAIL (-1)
#define NO_BASE (-2)
#define CONF_UNSET INT64_MIN

struct rush_ctx {
    flux_plugin_t *p;
    int64_t default_priority;
    size_t max_batch;
    bool add;         /* combine = "add": base (earlier plugins) + value */
    bool gate;        /* jobs without a rush value get priority 0 (wait for rush) */
    int64_t value_min; /* smallest value set accepts: 1 (replace) or 0 (add) */
    int64_t stored;   /* values currently held in job aux data */
    int64_t updates;  /* values accepted by set since load */
};

/* One job's state: rush's value (if any), and in add mode the base the earlier plugins
 * last returned and a priority to adopt after a reload. The destructor keeps
 * ctx->stored exact whoever frees it (our own delete, job destruction, plugin unload). */
struct rush_value {
    struct rush_ctx *ctx;
    bool has_value;
    int64_t value;
    int64_t base;   /* NO_BASE until the stack computed one */
    int64_t adopt;  /* add mode: a known job's priority before a reload, else -1 */
};

static void value_destroy (void *arg)
{
    struct rush_value *v = arg;
    if (v) {
        if (v->has_value)
            v->ctx->stored--;
        free (v);
    }
}

static struct rush_value *value_get (struct rush_ctx *ctx, flux_jobid_t id)
{
    return flux_jobtap_job_aux_get (ctx->p, id, AUX_VALUE);
}

/* The job's entry, created empty when missing. */
static struct rush_value *entry_get (struct rush_ctx *ctx, flux_jobid_t id)
{
    struct rush_value *v = value_get (ctx, id);
    if (v)
        return v;
    if (!(v = calloc (1, sizeof (*v))))
        return NULL;
    v->ctx = ctx;
    v->base = NO_BASE;
    v->adopt = -1;
    if (flux_jobtap_job_aux_set (ctx->p, id, AUX_VALUE, v, value_destroy) < 0) {
        int saved = errno;
        value_destroy (v);
        errno = saved;
        return NULL;
    }
    return v;
}

static void value_set (struct rush_value *v, int64_t value)
{
    if (!v->has_value)
        v->ctx->stored++;
    v->has_value = true;
    v->value = value;
    v->adopt = -1;
}

static int value_store (struct rush_ctx *ctx, flux_jobid_t id, int64_t value)
{
    struct rush_value *v = entry_get (ctx, id);
    if (!v)
        return -1;
    value_set (v, value);
    return 0;
}

/* add mode: base + value, never past the largest non-expedite priority. */
static int64_t added (int64_t base, int64_t value)
{
    int64_t sum = base + value;
    return sum > VALUE_MAX ? VALUE_MAX : sum;
}

static int64_t effective_priority (struct rush_ctx *ctx, int urgency, struct rush_value *v)
{
    if (urgency == FLUX_JOB_URGENCY_HOLD)
        return FLUX_JOB_PRIORITY_MIN;
    if (urgency == FLUX_JOB_URGENCY_EXPEDITE)
        return FLUX_JOB_PRIORITY_MAX;
    if (v && v->has_value)
        return v->value;
    return ctx->gate ? FLUX_JOB_PRIORITY_MIN : ctx->default_priority;
}

/* add mode: the earlier plugins' priority plus rush's term. Returns 1 when the OUT
 * priority is to be left as it is (the site plugin said "unavailable"). */
static int add_priority (struct rush_ctx *ctx, flux_plugin_arg_t *args, int urgency, int64_t *out)
{
    json_int_t base = NO_BASE, current = -1;
    struct rush_value *v;

    (void)flux_plugin_arg_unpack (args, FLUX_PLUGIN_ARG_OUT, "{s?I}", "priority", &base);
    (void)flux_plugin_arg_unpack (args, FLUX_PLUGIN_ARG_IN, "{s?I}", "priority", &current);
    if (base == PRIORITY_UNAVAIL)
        return 1;
    if (urgency == FLUX_JOB_URGENCY_HOLD || urgency == FLUX_JOB_URGENCY_EXPEDITE) {
        *out = effective_priority (ctx, urgency, NULL);
        return 0;
    }
    if (base < FLUX_JOB_PRIORITY_MIN || base > FLUX_JOB_PRIORITY_MAX)
        base = urgency;  /* no site plugin before this one: Flux's default, the urgency */
    if (!(v = entry_get (ctx, FLUX_JOBTAP_CURRENT_JOB))) {
        *out = ctx->gate ? FLUX_JOB_PRIORITY_MIN : added (base, ctx->default_priority);
        return 0;
    }
    v->base = base;
    if (!v->has_value && v->adopt >= 0 && v->adopt >= base)
        value_set (v, v->adopt - base > VALUE_MAX ? VALUE_MAX : v->adopt - base);
    v->adopt = -1;
    if (base == FLUX_JOB_PRIORITY_MAX)
        *out = base;
    else if (v->has_value)
        *out = added (base, v->value);
    else
        *out = ctx->gate ? FLUX_JOB_PRIORITY_MIN : added (base, ctx->default_priority);
    return 0;
}

/* job.state.priority and job.priority.get: always return a priority, so that the
 * builtin .priority-default (priority = urgency) never decides; in add mode, the sum
 * with what the plugins loaded before this one returned. */
static int priority_cb (flux_plugin_t *p, const char *topic, flux_plugin_arg_t *args, void *arg)
{
    struct rush_ctx *ctx = flux_plugin_aux_get (p, AUX_CTX);
    int urgency;
    int64_t priority;

    if (flux_plugin_arg_unpack (args, FLUX_PLUGIN_ARG_IN, "{s:i}", "urgency", &urgency) < 0) {
        flux_log (flux_jobtap_get_flux (p), LOG_ERR, "%s: %s: %s", PLUGIN_NAME, topic,
                  flux_plugin_arg_strerror (args));
        return -1;
    }
    if (ctx->add) {
        if (add_priority (ctx, args, urgency, &priority) == 1)
            return 0;  /* the site plugin's "unavailable" stands: the job waits in PRIORITY */
    }
    else
        priority = effective_priority (ctx, urgency, value_get (ctx, FLUX_JOBTAP_CURRENT_JOB));
    return flux_plugin_arg_pack (args, FLUX_PLUGIN_ARG_OUT, "{s:I}", "priority", (json_int_t)priority);
}

/* job.new: called for new jobs (priority -1) and, after a plugin load or a broker
 * restart, for every active job with the priority it already has. Adopting that
 * priority is what makes reloads and restarts change nothing. */
static int new_cb (flux_plugin_t *p, const char *topic, flux_plugin_arg_t *args, void *arg)
{
    struct rush_ctx *ctx = flux_plugin_aux_get (p, AUX_CTX);
    int urgency, state;
    json_int_t priority;

    if (flux_plugin_arg_unpack (args, FLUX_PLUGIN_ARG_IN, "{s:i s:i s:I}", "urgency", &urgency,
                                "state", &state, "priority", &priority) < 0)
        return 0;  /* nothing to adopt */
    if ((state != FLUX_JOB_STATE_PRIORITY && state != FLUX_JOB_STATE_SCHED)
        || urgency == FLUX_JOB_URGENCY_HOLD || urgency == FLUX_JOB_URGENCY_EXPEDITE
        || priority < VALUE_MIN || priority > VALUE_MAX)
        return 0;
    if (ctx->add) {
        /* The priority is base + value; the base is known at the next computation. */
        struct rush_value *v = entry_get (ctx, FLUX_JOBTAP_CURRENT_JOB);
        if (v && !v->has_value)
            v->adopt = priority;
        else if (!v)
            flux_log_error (flux_jobtap_get_flux (p), "%s: keeping the priority of a known job", PLUGIN_NAME);
        return 0;
    }
    if (value_store (ctx, FLUX_JOBTAP_CURRENT_JOB, priority) < 0)
        flux_log_error (flux_jobtap_get_flux (p), "%s: keeping the priority of a known job", PLUGIN_NAME);
    return 0;
}

/* The job left the queue (started, or cancelled on its way to inactive): free its value. */
static int leave_cb (flux_plugin_t *p, const char *topic, flux_plugin_arg_t *args, void *arg)
{
    if (flux_jobtap_job_aux_get (p, FLUX_JOBTAP_CURRENT_JOB, AUX_VALUE))
        (void)flux_jobtap_job_aux_set (p, FLUX_JOBTAP_CURRENT_JOB, AUX_VALUE, NULL, NULL);
    return 0;
}

static int query_cb (flux_plugin_t *p, const char *topic, flux_plugin_arg_t *args, void *arg)
{
    struct rush_ctx *ctx = flux_plugin_aux_get (p, AUX_CTX);
    return flux_plugin_arg_pack (args, FLUX_PLUGIN_ARG_OUT, "{s:I s:I s:I s:I s:s s:b}", "stored",
                                 (json_int_t)ctx->stored, "updates", (json_int_t)ctx->updates,
                                 "default", (json_int_t)ctx->default_priority, "max_batch",
                                 (json_int_t)ctx->max_batch, "combine", ctx->add ? "add" : "replace",
                                 "gate", ctx->gate);
}

static void respond_error (flux_t *h, const flux_msg_t *msg, int errnum, const char *text)
{
    if (flux_respond_error (h, msg, errnum, text) < 0)
        flux_log_error (h, "%s: flux_respond_error", PLUGIN_NAME);
}

/* The list under `key` in the request, checked for size before anything else. */
static json_t *request_list (struct rush_ctx *ctx, const flux_msg_t *msg, const char *key,
                             int *errnum, char *text, size_t len)
{
    json_t *list = NULL;
    if (flux_request_unpack (msg, NULL, "{s:o !}", key, &list) < 0 || !json_is_array (list)) {
        *errnum = EPROTO;
        snprintf (text, len, "%s: expected a JSON object {\"%s\": [...]} and nothing else",
                  PLUGIN_NAME, key);
        return NULL;
    }
    if (json_array_size (list) > ctx->max_batch) {
        *errnum = EINVAL;
        snprintf (text, len, "%s: %zu entries in one request, more than max_batch = %zu: split it",
                  PLUGIN_NAME, json_array_size (list), ctx->max_batch);
        return NULL;
    }
    return list;
}

static bool valid_id (json_t *o)
{
    return json_is_integer (o) && json_integer_value (o) > 0;
}

static void set_cb (flux_t *h, flux_msg_handler_t *mh, const flux_msg_t *msg, void *arg)
{
    struct rush_ctx *ctx = arg;
    char text[256];
    int errnum;
    json_t *list, *entry, *ignored;
    size_t i;
    int set = 0, unknown = 0, not_pending = 0;

    if (!(list = request_list (ctx, msg, "priorities", &errnum, text, sizeof (text)))) {
        respond_error (h, msg, errnum, text);
        return;
    }
    /* Check every entry first: a bad batch changes nothing. */
    json_array_foreach (list, i, entry) {
        json_t *value = json_array_get (entry, 1);
        if (!json_is_array (entry) || json_array_size (entry) != 2
            || !valid_id (json_array_get (entry, 0)) || !json_is_integer (value)
            || json_integer_value (value) < ctx->value_min || json_integer_value (value) > VALUE_MAX) {
            snprintf (text, sizeof (text),
                      "%s: priorities[%zu]: expected [job id > 0, value in %" PRId64 "..%" PRId64 "]",
                      PLUGIN_NAME, i, ctx->value_min, (int64_t)VALUE_MAX);
            respond_error (h, msg, EPROTO, text);
            return;
        }
    }
    if (!(ignored = json_array ())) {
        respond_error (h, msg, ENOMEM, PLUGIN_NAME ": out of memory");
        return;
    }
    json_array_foreach (list, i, entry) {
        json_t *jid = json_array_get (entry, 0);
        flux_jobid_t id = json_integer_value (jid);
        json_int_t value = json_integer_value (json_array_get (entry, 1));
        flux_plugin_arg_t *job;
        int state;

        if (!(job = flux_jobtap_job_lookup (ctx->p, id))) {
            unknown++;
            (void)json_array_append (ignored, jid);
            continue;
        }
        if (flux_plugin_arg_unpack (job, FLUX_PLUGIN_ARG_IN, "{s:i}", "state", &state) < 0
            || state == FLUX_JOB_STATE_INACTIVE) {
            unknown++;
            (void)json_array_append (ignored, jid);
        }
        else if (state & (FLUX_JOB_STATE_RUN | FLUX_JOB_STATE_CLEANUP)) {
            not_pending++;
            (void)json_array_append (ignored, jid);
        }
        else if (value_store (ctx, id, value) < 0) {
            flux_log_error (h, "%s: storing the value of job %" PRIu64, PLUGIN_NAME, id);
            unknown++;
            (void)json_array_append (ignored, jid);
        }
        else {
            /* Flux applies hold (urgency 0) and expedite (31) over the value itself;
             * jobs not yet in PRIORITY/SCHED take it when they get there. In add mode a
             * job whose base is not known yet (the site plugin has not computed one)
             * takes base + value at its first computation. */
            struct rush_value *v = value_get (ctx, id);
            int64_t priority = ctx->add ? (v && v->base >= 0 ? added (v->base, value) : -1) : value;
            if (priority >= 0 && flux_jobtap_reprioritize_job (ctx->p, id, (unsigned int)priority) < 0)
                flux_log_error (h, "%s: reprioritizing job %" PRIu64, PLUGIN_NAME, id);
            set++;
            ctx->updates++;
        }
        flux_plugin_arg_destroy (job);
    }
    if (flux_respond_pack (h, msg, "{s:i s:i s:i s:o}", "set", set, "unknown", unknown, "not_pending",
                           not_pending, "ignored", ignored) < 0)
        flux_log_error (h, "%s: flux_respond_pack", PLUGIN_NAME);
}

static void get_cb (flux_t *h, flux_msg_handler_t *mh, const flux_msg_t *msg, void *arg)
{
    struct rush_ctx *ctx = arg;
    char text[256];
    int errnum;
    json_t *list, *item, *out = NULL;
    size_t i;

    if (!(list = request_list (ctx, msg, "ids", &errnum, text, sizeof (text)))) {
        respond_error (h, msg, errnum, text);
        return;
    }
    json_array_foreach (list, i, item) {
        if (!valid_id (item)) {
            snprintf (text, sizeof (text), "%s: ids[%zu]: expected a job id > 0", PLUGIN_NAME, i);
            respond_error (h, msg, EPROTO, text);
            return;
        }
    }
    if (!(out = json_array ()))
        goto nomem;
    json_array_foreach (list, i, item) {
        struct rush_value *v = value_get (ctx, json_integer_value (item));
        json_t *pair = json_pack ("[I o]", json_integer_value (item),
                                  v && v->has_value ? json_integer (v->value) : json_null ());
        if (!pair || json_array_append_new (out, pair) < 0)
            goto nomem;
    }
    if (flux_respond_pack (h, msg, "{s:o s:I s:I s:I s:s}", "priorities", out, "stored",
                           (json_int_t)ctx->stored, "default", (json_int_t)ctx->default_priority,
                           "max_batch", (json_int_t)ctx->max_batch, "combine",
                           ctx->add ? "add" : "replace") < 0)
        flux_log_error (h, "%s: flux_respond_pack", PLUGIN_NAME);
    return;
nomem:
    json_decref (out);
    respond_error (h, msg, ENOMEM, PLUGIN_NAME ": out of memory");
}

static const struct flux_plugin_handler tab[] = {
    { "job.state.priority", priority_cb, NULL },
    { "job.priority.get", priority_cb, NULL },
    { "job.new", new_cb, NULL },
    { "job.state.run", leave_cb, NULL },
    { "job.state.cleanup", leave_cb, NULL },
    { "plugin.query", query_cb, NULL },
    { 0 },
};

static int configure (flux_plugin_t *p, struct rush_ctx *ctx)
{
    flux_t *h = flux_jobtap_get_flux (p);
    json_int_t def = CONF_UNSET, max_batch = DEFAULT_MAX_BATCH;
    const char *combine = "replace";
    int gate = 0;

    if (flux_plugin_get_conf (p)
        && flux_plugin_conf_unpack (p, "{s?I s?I s?s s?b !}", "default", &def, "max_batch", &max_batch,
                                    "combine", &combine, "gate", &gate) < 0) {
        flux_log (h, LOG_ERR,
                  "%s: conf: %s (known keys: default, max_batch, combine, gate; integers, \"replace\" or "
                  "\"add\", and a boolean)",
                  PLUGIN_NAME, flux_plugin_strerror (p));
        errno = EINVAL;
        return -1;
    }
    if (strcmp (combine, "replace") != 0 && strcmp (combine, "add") != 0) {
        flux_log (h, LOG_ERR, "%s: conf: combine must be \"replace\" (rush's value is the priority) or "
                  "\"add\" (added to the priority of the plugins loaded before)", PLUGIN_NAME);
        errno = EINVAL;
        return -1;
    }
    ctx->add = strcmp (combine, "add") == 0;
    ctx->gate = gate != 0;
    ctx->value_min = ctx->add ? ADD_VALUE_MIN : VALUE_MIN;
    if (def == CONF_UNSET)
        def = ctx->add ? 0 : DEFAULT_PRIORITY;
    if (def < ctx->value_min || def > VALUE_MAX || max_batch < 1 || max_batch > LIMIT_MAX_BATCH) {
        flux_log (h, LOG_ERR, "%s: conf: default must be in %" PRId64 "..%" PRId64 ", max_batch in 1..%d",
                  PLUGIN_NAME, ctx->value_min, (int64_t)VALUE_MAX, LIMIT_MAX_BATCH);
        errno = EINVAL;
        return -1;
    }
    ctx->default_priority = def;
    ctx->max_batch = (size_t)max_batch;
    return 0;
}

int flux_plugin_init (flux_plugin_t *p)
{
    struct rush_ctx *ctx = calloc (1, sizeof (*ctx));

    if (!ctx || flux_plugin_aux_set (p, AUX_CTX, ctx, free) < 0) {
        free (ctx);
        return -1;
    }
    ctx->p = p;
    if (configure (p, ctx) < 0)
        return -1;
    /* The registered name, not the file name, makes the service topic. */
    if (flux_plugin_register (p, PLUGIN_NAME, tab) < 0)
        return -1;
    if (flux_jobtap_service_register (p, "set", set_cb, ctx) < 0
        || flux_jobtap_service_register (p, "get", get_cb, ctx) < 0)
        return -1;
    return 0;
}

// vi:ts=4 sw=4 expandtab
