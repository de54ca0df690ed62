#!/usr/bin/env python3
"""PyTorch reference for `simclr bench`.

Times full SimCLR training steps -- forward in training mode, NT-Xent loss,
backward, SGD update -- of the same network `simclr bench` times, on random
inputs, and prints one JSON object per batch size with the keys of
`simclr bench --json` (device, batch_images, views, steps, step_seconds,
views_per_sec, model_gflop_per_step, gflops_per_sec, sgemm_gflops_per_sec,
loss, ...) plus peak_gpu_mb (torch.cuda.max_memory_allocated, MiB) and the
PyTorch settings used.

The network: torchvision resnet18 with the CIFAR stem (conv1 3x3 stride 1
pad 1 with 64 filters, no max-pool, fc removed: 512 features) and the
projection head Linear(512,512) - BatchNorm1d - ReLU - Linear(512,128).
The loss: NT-Xent of SPEC section 2 (L2-normalised projections, temperature
0.5, views 2k and 2k+1 of image k are positives, negatives from the batch),
or with --multilevel the MLMC correction L_B - (L_B1 + L_B2)/2. The optimiser:
SGD, momentum 0.9, weight decay 5e-4 on convolution and linear weights only
(as simclr's optimiser: no decay of batch-norm parameters and biases).

Timing: --warmup untimed steps (cuDNN autotuning, torch.compile), then
--steps timed steps between CUDA events; step_seconds is their mean and
step_seconds_median the median of the per-step event times. By default every
step reads the loss back to the host (loss.item()), as simclr's NTXent kernel
does, so both programs synchronise once a step; --no-sync-each-step lets the
GPU queue run ahead.

Run with the PyTorch of the GPU machine:

    /opt/torch/.venv/bin/python benchmarks/pytorch_simclr_bench.py \
        --images 2,8,32,128,512 --steps 20 --warmup 5
    ... --amp bf16 --channels-last      # PyTorch's fast path
    ... --compile                        # torch.compile (slow first steps)

CPU mode: --device cpu times the same step on the host with
--threads intra-op threads (default 2, the development machine's cores),
the way `simclr bench --device cpu` runs; peak_rss_mb is then the process's
peak resident memory (VmHWM), as simclr reports it. Debian's PyTorch
installs with `apt-get install python3-torch python3-torchvision`:

    /usr/bin/python3 benchmarks/pytorch_simclr_bench.py --device cpu \
        --threads 2 --images 2,8 --steps 5 --warmup 2

benchmarks/cpu_compare.py alternates this with `simclr bench` and tabulates
the ratio.
"""

import argparse
import json
import math
import platform
import statistics
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="PyTorch reference timing of SimCLR ResNet-18 training steps "
        "(one JSON line per batch size, keys as `simclr bench --json`).")
    p.add_argument("--images", default="2,8,32,128,512",
                   help="comma-separated images per step (each gives 2 views); default %(default)s")
    p.add_argument("--steps", type=int, default=20, help="timed steps per batch size (default %(default)s)")
    p.add_argument("--warmup", type=int, default=5,
                   help="untimed warm-up steps per batch size, at least 1 (default %(default)s)")
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format for model and inputs")
    p.add_argument("--amp", choices=["none", "bf16"], default="none",
                   help="autocast precision of forward and backward (loss always float32); default %(default)s")
    p.add_argument("--precision", choices=["tf32", "fp32"], default="tf32",
                   help="float32 matrix precision of cuBLAS and cuDNN, as simclr's --precision "
                        "(default %(default)s)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model and the loss")
    p.add_argument("--compile-mode", default="default",
                   choices=["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"],
                   help="torch.compile mode (default %(default)s)")
    p.add_argument("--multilevel", action="store_true",
                   help="time the multilevel loss L_B - (L_B1 + L_B2)/2 (needs even --images)")
    p.add_argument("--no-sync-each-step", dest="sync_each_step", action="store_false",
                   help="do not read the loss back to the host every step")
    p.add_argument("--tau", type=float, default=0.5, help="NT-Xent temperature (default %(default)s)")
    p.add_argument("--proj-dim", type=int, default=128, help="projection dimension (default %(default)s)")
    p.add_argument("--input-size", type=int, default=32, help="input height and width (default %(default)s)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (default %(default)s)")
    p.add_argument("--seed", type=int, default=1, help="seed of weights and inputs (default %(default)s)")
    p.add_argument("--device", default="cuda", help="torch device: cuda, or cpu for the CPU mode (default %(default)s)")
    p.add_argument("--threads", type=int, default=2,
                   help="intra-op threads with --device cpu (torch.set_num_threads); default %(default)s")
    a = p.parse_args(argv)
    try:
        a.image_list = [int(s) for s in a.images.split(",") if s.strip()]
    except ValueError:
        p.error("--images %r: give comma-separated positive integers, e.g. 2,8,32" % a.images)
    if not a.image_list or any(n < 1 for n in a.image_list):
        p.error("--images %r: give comma-separated positive integers, e.g. 2,8,32" % a.images)
    if a.multilevel and any(n % 2 for n in a.image_list):
        p.error("--multilevel needs even --images, got %s" % a.images)
    if a.steps < 1:
        p.error("--steps %d: must be at least 1" % a.steps)
    if a.threads < 1:
        p.error("--threads %d: must be at least 1" % a.threads)
    if a.warmup < 1:
        p.error("--warmup %d: must be at least 1 (the first step plans and autotunes)" % a.warmup)
    if not a.tau > 0:
        p.error("--tau %g: must be positive" % a.tau)
    return a


# torch is imported after argument parsing so that --help works anywhere.
def import_torch():
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        sys.exit("pytorch_simclr_bench.py: %s; run it with /opt/torch/.venv/bin/python on the GPU machine, "
                 "or on a CPU with Debian's /usr/bin/python3 after `apt-get install python3-torch python3-torchvision`" % e)
    import torch
    import torchvision
    return torch, torchvision


def build_model(torch, torchvision, proj_dim):
    """torchvision resnet18 with the CIFAR stem and the SimCLR head."""
    nn = torch.nn

    class SimCLRNet(nn.Module):
        def __init__(self):
            super().__init__()
            backbone = torchvision.models.resnet18(num_classes=10)
            backbone.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
            nn.init.kaiming_normal_(backbone.conv1.weight, mode="fan_out", nonlinearity="relu")
            backbone.maxpool = nn.Identity()
            backbone.fc = nn.Identity()
            self.backbone = backbone
            self.head = nn.Sequential(
                nn.Linear(512, 512), nn.BatchNorm1d(512), nn.ReLU(inplace=True), nn.Linear(512, proj_dim))

        def forward(self, x):
            return self.head(self.backbone(x))

    return SimCLRNet()


def make_losses(torch):
    F = torch.nn.functional

    def nt_xent(z, tau):
        """SPEC section 2: mean over the 2m views of -log softmax of the positive,
        the view itself excluded from the denominator. Rows 2k, 2k+1 pair up."""
        z = F.normalize(z.float(), dim=1)
        sim = (z @ z.t()) / tau
        views = z.shape[0]
        eye = torch.eye(views, dtype=torch.bool, device=z.device)
        sim = sim.masked_fill(eye, float("-inf"))
        target = torch.arange(views, device=z.device) ^ 1
        return F.cross_entropy(sim, target)

    def simclr_loss(z, tau, multilevel):
        full = nt_xent(z, tau)
        if not multilevel:
            return full
        half = z.shape[0] // 2  # first n/2 images = first n views
        return full - 0.5 * (nt_xent(z[:half], tau) + nt_xent(z[half:], tau))

    return simclr_loss


def model_flops_per_view(torch, model, input_size, device):
    """Convolution and linear FLOPs (2 x multiply-adds) of one view's forward
    pass, counted as simclr's resnet18.Model.FLOPs counts them."""
    total = [0.0]
    hooks = []

    def conv_hook(mod, inp, out):
        k = mod.kernel_size[0] * mod.kernel_size[1] * (mod.in_channels // mod.groups)
        total[0] += 2.0 * out.numel() * k

    def linear_hook(mod, inp, out):
        total[0] += 2.0 * out.numel() * mod.in_features

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, torch.nn.Linear):
            hooks.append(m.register_forward_hook(linear_hook))
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 3, input_size, input_size, device=device))
    model.train(was_training)
    for h in hooks:
        h.remove()
    return total[0]


class Timer:
    """Device-side step timing: CUDA events on a GPU, a synchronised host
    clock elsewhere."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.marks = []

    def mark(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            self.marks.append(e)
        else:
            self.marks.append(time.perf_counter())

    def step_seconds(self):
        if self.cuda:
            self.torch.cuda.synchronize()
            return [a.elapsed_time(b) / 1e3 for a, b in zip(self.marks, self.marks[1:])]
        return [b - a for a, b in zip(self.marks, self.marks[1:])]


def time_sgemm(torch, device):
    """Best of three 1024^3 float32 products (TF32 per --precision), GFLOP/s,
    like simclr bench's sgemm_gflops_per_sec."""
    n = 1024
    g = torch.Generator(device="cpu").manual_seed(7)
    a = torch.randn(n, n, generator=g).to(device)
    b = torch.randn(n, n, generator=g).to(device)
    c = a @ b
    best = 0.0
    for _ in range(3):
        t = Timer(torch, device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t.mark()
        c = a @ b
        t.mark()
        if device.type != "cuda":
            float(c[0, 0])
        sec = t.step_seconds()[0]
        if sec > 0:
            best = max(best, 2.0 * n ** 3 / sec / 1e9)
    return best


def set_float32_precision(torch, precision):
    """TF32 or strict float32 for cuBLAS and cuDNN. PyTorch 2.9 added the
    fp32_precision settings and deprecates allow_tf32 (mixing the two APIs
    is an error there); older versions have only allow_tf32."""
    tf32 = precision == "tf32"
    try:
        major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    except ValueError:
        major, minor = 0, 0
    if (major, minor) >= (2, 9):
        torch.backends.cuda.matmul.fp32_precision = "tf32" if tf32 else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if tf32 else "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32


def peak_rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def bench_one(torch, torchvision, args, device, images, simclr_loss, describe, sgemm):
    torch.manual_seed(args.seed)
    views = 2 * images
    model = build_model(torch, torchvision, args.proj_dim).to(device)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    flops_per_view = model_flops_per_view(torch, model, args.input_size, device)

    decay, no_decay = [], []
    for name, prm in model.named_parameters():
        (decay if prm.ndim > 1 else no_decay).append(prm)  # BN weights/biases and biases: ndim 1
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=args.lr, momentum=0.9)

    g = torch.Generator(device="cpu").manual_seed(args.seed)
    x = torch.randn(views, 3, args.input_size, args.input_size, generator=g).to(device)
    x = x.contiguous(memory_format=fmt)

    forward = model
    loss_fn = simclr_loss
    if args.compile:
        forward = torch.compile(model, mode=args.compile_mode)
        loss_fn = torch.compile(simclr_loss, mode=args.compile_mode)
    use_amp = args.amp == "bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
            z = forward(x)
        loss = loss_fn(z, args.tau, args.multilevel)
        loss.backward()
        opt.step()
        return loss

    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    compile_start = time.perf_counter()
    for _ in range(args.warmup):
        loss = step()
    last = float(loss.item())
    if device.type == "cuda":
        torch.cuda.synchronize()
    warmup_seconds = time.perf_counter() - compile_start

    timer = Timer(torch, device)
    cpu_start = time.process_time()
    wall_start = time.perf_counter()
    timer.mark()
    for _ in range(args.steps):
        loss = step()
        if args.sync_each_step:
            last = float(loss.item())
        timer.mark()
    per_step = timer.step_seconds()
    last = float(loss.item())
    wall = time.perf_counter() - wall_start
    cpu_per_step = (time.process_time() - cpu_start) / args.steps

    step_seconds = sum(per_step) / len(per_step)
    gflop = 3.0 * flops_per_view * views / 1e9
    peak_gpu = None
    if device.type == "cuda":
        peak_gpu = torch.cuda.max_memory_allocated() / 2 ** 20
    res = {
        "device": device.type,
        "backend": describe,
        "blas": "cuBLAS via PyTorch" if device.type == "cuda" else "PyTorch CPU",
        "threads": torch.get_num_threads(),
        "batch_images": images,
        "views": views,
        "width": 1.0,
        "input_size": args.input_size,
        "multilevel": args.multilevel,
        "steps": args.steps,
        "step_seconds": step_seconds,
        "views_per_sec": views / step_seconds,
        "model_gflop_per_step": gflop,
        "gflops_per_sec": gflop / step_seconds,
        "sgemm_gflops_per_sec": sgemm,
        "peak_rss_mb": peak_rss_mb(),
        "cpu_seconds_per_step": cpu_per_step,
        "loss": last,
        # PyTorch-only fields.
        "peak_gpu_mb": peak_gpu,
        "step_seconds_median": statistics.median(per_step),
        "wall_step_seconds": wall / args.steps,
        "warmup_steps": args.warmup,
        "warmup_seconds": warmup_seconds,
        "amp": args.amp,
        "precision": args.precision,
        "channels_last": args.channels_last,
        "compile": args.compile_mode if args.compile else None,
        "sync_each_step": args.sync_each_step,
        "framework": "pytorch",
    }
    if not math.isfinite(last):
        res["error"] = "loss is not finite"
    return res


def main(argv=None):
    args = parse_args(argv)
    torch, torchvision = import_torch()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("pytorch_simclr_bench.py: torch.cuda.is_available() is False (torch %s, built for CUDA %s); "
                 "use --device cpu for a smoke test" % (torch.__version__, torch.version.cuda))
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    set_float32_precision(torch, args.precision)
    torch.backends.cudnn.benchmark = True

    describe = "PyTorch %s, torchvision %s, Python %s" % (
        torch.__version__, torchvision.__version__, platform.python_version())
    if device.type == "cuda":
        prop = torch.cuda.get_device_properties(device)
        describe += ", %s (sm_%d%d, %d SMs, %.0f GiB), CUDA %s, cuDNN %s, %s" % (
            prop.name, prop.major, prop.minor, prop.multi_processor_count, prop.total_memory / 2 ** 30,
            torch.version.cuda, torch.backends.cudnn.version(), args.precision)
    if device.type == "cpu":
        describe += ", CPU %s, %d threads, oneDNN %s" % (
            cpu_model(), torch.get_num_threads(), "on" if torch.backends.mkldnn.is_available() else "off")
    describe += ", amp %s%s%s" % (args.amp, ", channels_last" if args.channels_last else "",
                                  ", compile " + args.compile_mode if args.compile else "")
    simclr_loss = make_losses(torch)
    sgemm = time_sgemm(torch, device)

    failures = 0
    for images in args.image_list:
        try:
            res = bench_one(torch, torchvision, args, device, images, simclr_loss, describe, sgemm)
        except Exception as e:  # one batch size failing (OOM, compile error) must not stop the rest
            failures += 1
            res = {"device": device.type, "backend": describe, "batch_images": images, "views": 2 * images,
                   "framework": "pytorch", "error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(res), flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
