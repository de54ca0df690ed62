#!/usr/bin/env python3
"""Load a simclr model.safetensors into PyTorch: torchvision's resnet18 with
the CIFAR stem, and the projection head.

The backbone is a torchvision.models.ResNet built by torchvision itself
(resnet18, then the CIFAR stem: conv1 3x3 stride 1 padding 1, no max pool,
fc removed so that it returns the 512 pooled features). A network trained
with --width other than 1 has its four stages rebuilt by torchvision's own
ResNet._make_layer at the checkpoint's widths; with --norm group every
batch norm is torch.nn.GroupNorm(min(32, C), C). The head is
Sequential(Linear, BatchNorm1d, ReLU, Linear) (batch norm), or
Sequential(BatchNorm1d(affine=False), Linear, ReLU, Linear) (group norm),
with the checkpoint's head.* names. Both load with strict=True: every tensor
of the file is used and every parameter of the modules is set.

Use it from Python (put scripts/ on the path):

    from simclr_torch import load_model
    backbone, head = load_model("runs/quick/model.safetensors")
    features = backbone(x)      # x: (N, 3, 32, 32), normalised; eval mode
    z = head(features)          # the projections the SimCLR loss compares

or from the shell, on inputs prepared as `simclr embed` prepares them (an
.npy array N x 3 x 32 x 32 of float32, normalised with the data set's
per-channel mean and standard deviation):

    /usr/bin/python3 scripts/simclr_torch.py runs/quick/model.safetensors \\
        --inputs x.npy --features f.npy --projections z.npy

Without --inputs it loads the model and prints what it built. It needs only
PyTorch, torchvision and NumPy (Debian: apt-get install python3-torch
python3-torchvision); the safetensors file is read directly.
"""

import argparse
import json
import struct
import sys


def read_safetensors(path):
    """Returns ({name: (dtype, shape, bytes)}, metadata) of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError("%s: header of %d bytes runs past the end of the file" % (path, n))
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    data = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        lo, hi = t["data_offsets"]
        tensors[name] = (t["dtype"], t["shape"], data[lo:hi])
    return tensors, meta


def to_torch(torch, dtype, shape, buf):
    dtypes = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "F16": torch.float16, "BF16": torch.bfloat16}
    if dtype not in dtypes:
        raise ValueError("tensor dtype %s is not supported" % dtype)
    t = torch.frombuffer(bytearray(buf), dtype=dtypes[dtype]) if buf else torch.empty(0, dtype=dtypes[dtype])
    return t.reshape(shape).clone()


def groups(c, most=32):
    """simclr's group count: the largest divisor of c that is at most 32."""
    g = max(1, min(most, c))
    while c % g:
        g -= 1
    return g


def build_backbone(torch, torchvision, widths, norm):
    """torchvision resnet18 with the CIFAR stem, at the given stage widths."""
    nn = torch.nn
    if norm == "group":
        def norm_layer(c):
            return nn.GroupNorm(groups(c), c)
    else:
        norm_layer = nn.BatchNorm2d
    net = torchvision.models.resnet18(norm_layer=norm_layer)
    # The CIFAR stem: 3x3 stride-1 convolution, no max pool.
    net.conv1 = nn.Conv2d(3, widths[0], kernel_size=3, stride=1, padding=1, bias=False)
    net.bn1 = norm_layer(widths[0])
    net.maxpool = nn.Identity()
    if list(widths) != [64, 128, 256, 512]:
        # Another width multiplier: torchvision's own stage builder.
        from torchvision.models.resnet import BasicBlock
        net.inplanes = widths[0]
        net.layer1 = net._make_layer(BasicBlock, widths[0], 2)
        net.layer2 = net._make_layer(BasicBlock, widths[1], 2, stride=2)
        net.layer3 = net._make_layer(BasicBlock, widths[2], 2, stride=2)
        net.layer4 = net._make_layer(BasicBlock, widths[3], 2, stride=2)
    net.fc = nn.Identity()  # forward returns the pooled features
    return net


def build_head(torch, features, proj_dim, norm):
    nn = torch.nn
    if norm == "group":
        return nn.Sequential(nn.BatchNorm1d(features, affine=False), nn.Linear(features, features),
                             nn.ReLU(), nn.Linear(features, proj_dim))
    return nn.Sequential(nn.Linear(features, features), nn.BatchNorm1d(features), nn.ReLU(),
                         nn.Linear(features, proj_dim))


def load_model(path, device="cpu"):
    """Loads a simclr model.safetensors; returns (backbone, head) in eval mode."""
    import torch
    import torchvision
    tensors, meta = read_safetensors(path)
    state = {}
    for name, (dtype, shape, buf) in tensors.items():
        t = to_torch(torch, dtype, shape, buf)
        if name.endswith("num_batches_tracked"):
            t = t.to(torch.int64)  # simclr stores the count as a float
        state[name] = t
    if "conv1.weight" not in state or "head.3.weight" not in state:
        raise ValueError("%s is not a simclr model checkpoint (no conv1.weight or head.3.weight)" % path)
    norm = meta.get("norm") or "batch"
    head_kind = meta.get("head", "")
    if norm == "group" and head_kind != "runningnorm-linear-relu-linear":
        raise ValueError("%s: group-norm head %r of an earlier simclr version; train it again" % (path, head_kind))
    widths = [state["conv1.weight"].shape[0]] + [state["layer%d.0.conv1.weight" % s].shape[0] for s in (2, 3, 4)]
    proj_dim = state["head.3.weight"].shape[0]
    backbone = build_backbone(torch, torchvision, widths, norm)
    head = build_head(torch, widths[3], proj_dim, norm)
    backbone.load_state_dict({k: v for k, v in state.items() if not k.startswith("head.")}, strict=True)
    head.load_state_dict({k[len("head."):]: v for k, v in state.items() if k.startswith("head.")}, strict=True)
    return backbone.to(device).eval(), head.to(device).eval()


def main(argv=None):
    p = argparse.ArgumentParser(description="load a simclr model.safetensors into torchvision's resnet18 and run it")
    p.add_argument("model", help="model.safetensors of a simclr run")
    p.add_argument("--inputs", help=".npy of float32 images N x 3 x 32 x 32, normalised as simclr embed does")
    p.add_argument("--features", help="write the backbone features (N x 512 at width 1) to this .npy")
    p.add_argument("--projections", help="write the head's outputs (N x proj_dim) to this .npy")
    p.add_argument("--device", default="cpu", help="torch device (default %(default)s)")
    p.add_argument("--batch", type=int, default=256, help="images per forward pass (default %(default)s)")
    a = p.parse_args(argv)
    if (a.features or a.projections) and not a.inputs:
        p.error("--features and --projections need --inputs")
    try:
        import numpy as np
        import torch
    except ImportError as e:
        sys.exit("simclr_torch.py: %s: install PyTorch, torchvision and NumPy "
                 "(Debian: apt-get install python3-torch python3-torchvision)" % e)
    try:
        backbone, head = load_model(a.model, a.device)
    except (OSError, ValueError, RuntimeError) as e:
        sys.exit("simclr_torch.py: %s" % e)
    n_params = sum(t.numel() for t in backbone.state_dict().values()) + sum(t.numel() for t in head.state_dict().values())
    print("loaded %s: torchvision %s (CIFAR stem, %d features), head %s -> %d; %d values"
          % (a.model, type(backbone).__name__, backbone.layer4[-1].conv2.out_channels,
             " - ".join(type(m).__name__ for m in head), head[-1].out_features, n_params), file=sys.stderr)
    if not a.inputs:
        return
    x = np.load(a.inputs)
    if x.dtype != np.float32 or x.ndim != 4 or x.shape[1] != 3:
        sys.exit("simclr_torch.py: %s holds %s %s; want float32 N x 3 x H x W" % (a.inputs, x.dtype, x.shape))
    feats, projs = [], []
    with torch.no_grad():
        for lo in range(0, len(x), a.batch):
            f = backbone(torch.from_numpy(x[lo:lo + a.batch]).to(a.device))
            feats.append(f.cpu().numpy())
            projs.append(head(f).cpu().numpy())
    if a.features:
        np.save(a.features, np.concatenate(feats).astype(np.float32))
    if a.projections:
        np.save(a.projections, np.concatenate(projs).astype(np.float32))


if __name__ == "__main__":
    main()
