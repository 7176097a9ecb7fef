"""rok inside PyTorch: run a rok plan in a training step, capture real traces.

    import rok_torch
    runner = rok_torch.apply(model, "plan.json", nvme_dir="/mnt/nvme")
    with runner.step():
        model(input_ids, labels).backward()
    runner.report                      # bytes moved, peak, per-layer bytes

    trace = rok_torch.capture(model, (input_ids, labels))   # rok-trace/1
"""
from .apply import DECISIONS, Plan, PlanError, Runner, apply
from .capture import capture

__all__ = ["apply", "capture", "Plan", "PlanError", "Runner", "DECISIONS"]
