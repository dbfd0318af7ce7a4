/* snap.h — checkpoint files (format version 5), the one format of every run (the node loop's
 * snapshot, algo/loop.c). Version 5: the sequential optimizers run on the loop and save its
 * sections (version 4 had their own "position" section); a file of another version is refused,
 * naming the file and both versions.
 *
 * A snapshot is a list of named sections that point at the caller's live state: raw memory
 * (parameters, centers, counters), an optimizer (its step count and state vectors) or a data
 * sampler (epoch, position and rng). Saving writes every section; loading checks that the file
 * holds exactly the registered sections, in order and with their sizes, and fills them in place
 * (a sampler is re-seeked; the caller re-derives what is derived, e.g. optim_refresh).
 *
 * File: a header with the configuration a resume must match (net, data, algorithm and its
 * hyper-parameters, seed, batch, node count, runtime, and this file's node), the snapshot's
 * generation (1 for the first save of a run, +1 per save), the sections, then a CRC32 (zlib) of
 * all of it; the file must be exactly that long. A mismatch is an exit-1 error naming the file
 * and the field.
 *
 * Distributed runs keep one file per node: node 0 writes PATH, node k writes PATH.node<k>. Each
 * save keeps the file it replaces as "<file>.prev", so when a crash lands between two nodes'
 * saves every node still holds the generation before it (see loop_resume in algo/loop.c). */
#ifndef PDL_SNAP_H
#define PDL_SNAP_H
#include "core/run.h"

#define SNAP_MAX 128

typedef enum { SNAP_MEM, SNAP_OPTIM, SNAP_SAMPLER, SNAP_WS } snap_kind_t;
typedef struct { char name[32]; snap_kind_t kind; void *p; size_t bytes; } snap_sec_t;
typedef struct { snap_sec_t sec[SNAP_MAX]; int n; } snap_t;

void snap_init(snap_t *s);
void snap_add(snap_t *s, const char *name, void *p, size_t bytes);
void snap_add_optim(snap_t *s, const char *name, optim_t *o);
void snap_add_sampler(snap_t *s, const char *name, sampler_t *sm);
/* a workspace's batch norm state (model.h: ws_state_get/set, its running statistics; in the
 * backend's memory, staged through the host); only for a net that has some (net_state_floats > 0).
 * A net with batch norm is new with this section, so no file of an older pdl holds one: the format
 * version stays 5 (a file without the section is refused by the section count, naming it). */
void snap_add_ws(snap_t *s, const char *name, workspace_t *ws);

/* The file of node `node` of `nnodes` (PATH for node 0, PATH.node<k> otherwise), with ".prev"
 * appended when prev. */
void snap_path(char *out, size_t n, const char *base, int node, int nnodes, int prev);
/* Writes the sections to `path` (temp file + rename; the replaced file is kept as .prev when
 * keep_prev). Dies (exit 1) naming the path on a write error. */
void snap_save(const char *path, const run_t *r, int node, int nnodes, long gen, const snap_t *s, int keep_prev);
/* Reads `path` and checks everything: header against the run, node and node count, checksum,
 * sections against s. apply = 1 also fills the sections. Returns the file's generation, or -1
 * if the file does not exist; dies (exit 1) naming the file and the field otherwise. */
long snap_read(const char *path, const run_t *r, int node, int nnodes, snap_t *s, int apply);
/* snap_read without applying, for a resume choosing between a file and its .prev: a damaged file
 * (truncated, or its checksum does not match) returns -2 with the reason in why instead of dying;
 * everything else as snap_read. *lead: the first long of the first section (a raw one: the node
 * loop's update count), -1 when the file has none. */
long snap_probe(const char *path, const run_t *r, int node, int nnodes, snap_t *s, char *why, size_t n, long *lead);
/* Every figure read from a file is range-checked (generation, optimizer step count, sampler epoch and
 * position; the loop's own figures in algo/loop.c), naming the file and the field. A save first removes
 * the temp files that interrupted saves left beside the file (outfile_sweep). */

#endif
