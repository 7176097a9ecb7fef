/* Hardware profile: one GPU, its PCIe links, host memory and an NVMe array.
 *
 * Read from configs/hw/NAME.json or written by `rok calibrate` (schema in
 * DESIGN.md, "Hardware profile"). Bandwidths of the NVMe section are per
 * device; the devices are striped (RAID0). */
#pragma once

#include <glib.h>
#include <json-c/json.h>

G_BEGIN_DECLS

/* One knot of a measured GEMM-efficiency curve: a GEMM launch of `flops`
 * floating-point operations (2·batch·m·n·k) reaches `efficiency` of
 * peak_flops. */
typedef struct {
  double flops;
  double efficiency;
} RokHwGemmPoint;

typedef struct {
  char *name;
  char *source; /* free text: datasheets or the calibration run (may be NULL) */
  struct {
    guint64 memory;
    double peak_flops;        /* dense 16-bit FLOP/s */
    double matmul_efficiency; /* fraction of peak that GEMMs reach, (0, 1] */
    double hbm_bandwidth;     /* bytes/s */
    gint64 launch_overhead;   /* ns per kernel */
    /* Optional ("gemm_efficiency": [[flops, efficiency], ...] as `rok
     * calibrate` writes it): efficiency by GEMM size, flops strictly
     * increasing, efficiencies in (0, 1]. NULL / 0 when the profile has
     * none: then matmul_efficiency applies to every GEMM. */
    RokHwGemmPoint *gemm_curve;
    guint gemm_curve_len;
  } gpu;
  struct {
    double h2d_bandwidth, d2h_bandwidth; /* bytes/s, each direction */
    gint64 latency;                      /* ns per transfer */
  } pcie;
  struct {
    guint64 memory;
    guint64 pinned_buffer;   /* staging buffer for GPU <-> SSD traffic */
    double memcpy_bandwidth; /* bytes/s */
  } host;
  struct {
    guint64 devices;        /* 0: no SSDs */
    double read_bandwidth;  /* bytes/s per device */
    double write_bandwidth; /* bytes/s per device */
    gint64 latency;         /* ns per request */
    guint64 queue_depth;
    guint64 capacity;       /* bytes per device */
    double endurance_pbw;   /* petabytes written per device over its life; 0: unknown */
    gboolean gpudirect;     /* SSD <-> GPU without the host staging buffer */
  } nvme;
} RokHw;

RokHw *rok_hw_load(const char *path, GError **error);
RokHw *rok_hw_parse(const char *name, const char *text, gsize length, GError **error);
RokHw *rok_hw_copy(const RokHw *hw);
void rok_hw_free(RokHw *hw);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokHw, rok_hw_free)

/* The profile in base units; reads back to an equal profile. */
json_object *rok_hw_to_json(const RokHw *hw);
gboolean rok_hw_save(const RokHw *hw, const char *path, GError **error);

/* The fraction of peak_flops a GEMM launch of FLOPS operations reaches:
 * matmul_efficiency without a curve; with one, the curve interpolated in
 * log(flops) with Steffen's monotone method (no overshoot between knots;
 * linear with two knots), clamped to the end knots outside them. */
double rok_hw_gemm_efficiency(const RokHw *hw, double flops);

/* Derived rates of the whole array (all devices striped). */
double rok_hw_nvme_read_bandwidth(const RokHw *hw);
double rok_hw_nvme_write_bandwidth(const RokHw *hw);

G_END_DECLS
