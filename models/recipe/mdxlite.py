"""Small MDX-signature mask network + the exact STFT / chunking convention
used by the Mixdown engine.

Representation (identical to UVR MDX-Net models):
  spec = torch.stft(x, n_fft, hop=1024, window=hann(n_fft, periodic=True),
                    center=True, normalized=False, return_complex=True)
  net input  [B, 4, dim_f, dim_t] = [L.re, L.im, R.re, R.im] of bins 0..dim_f-1
  net output [B, 4, dim_f, dim_t]      (single stem: primary stem spectrogram)
          or [B, S, 4, dim_f, dim_t]   (multi stem)
  A chunk is hop*(dim_t-1) samples; n_fft/2 samples are trimmed at each side
  of each chunk's output, the rest is Hann-weighted overlap-added.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ------------------------------------------------------------------ STFT
class Spec:
    def __init__(self, n_fft, hop, dim_f, dim_t):
        self.n_fft, self.hop, self.dim_f, self.dim_t = n_fft, hop, dim_f, dim_t
        self.window = torch.hann_window(n_fft, periodic=True)
        self.chunk = hop * (dim_t - 1)
        self.n_bins = n_fft // 2 + 1

    def stft(self, x):
        """x [..., 2, N] -> [..., 4, dim_f, frames] (first 3 bins zeroed)"""
        shp = x.shape[:-2]
        z = torch.stft(x.reshape(-1, x.shape[-1]), self.n_fft, self.hop, window=self.window,
                       center=True, normalized=False, return_complex=True)
        z = z[:, : self.dim_f]
        z = torch.view_as_real(z)  # [b*2, F, T, 2]
        z = z.reshape(*shp, 2, self.dim_f, z.shape[-2], 2)
        z = z.permute(*range(len(shp)), len(shp), len(shp) + 3, len(shp) + 1, len(shp) + 2)
        z = z.reshape(*shp, 4, self.dim_f, z.shape[-1]).contiguous()
        z[..., :3, :] = 0
        return z

    def istft(self, z, length=None):
        """[..., 4, dim_f, T] -> [..., 2, N]; bins >= dim_f and first 3 set to 0"""
        shp = z.shape[:-3]
        T = z.shape[-1]
        z = z.reshape(-1, 2, 2, self.dim_f, T).permute(0, 1, 3, 4, 2)
        full = torch.zeros(z.shape[0], 2, self.n_bins, T, 2, dtype=z.dtype)
        full[:, :, 3: self.dim_f] = z[:, :, 3:]
        c = torch.view_as_complex(full.contiguous()).reshape(-1, self.n_bins, T)
        y = torch.istft(c, self.n_fft, self.hop, window=self.window, center=True,
                        normalized=False, length=length)
        return y.reshape(*shp, 2, y.shape[-1])


def separate(run, spec, mix, n_out, overlap=0.5, batch=4):
    """Chunked inference exactly like the engine.
    run: fn([B,4,F,T] tensor) -> [B,4,F,T] or [B,S,4,F,T]
    mix: np/tensor [2, N] float32 -> returns tensor [n_out, 2, N]."""
    mix = torch.as_tensor(mix, dtype=torch.float32)
    N = mix.shape[-1]
    trim = spec.n_fft // 2
    gen = spec.chunk - 2 * trim
    step = max(1, int(gen * (1 - overlap)))
    # chunks start every `step` samples; the trimmed centre (gen samples) of
    # each chunk is Hann-weighted and overlap-added, then normalised.
    nchunks = max(1, math.ceil((N - gen) / step) + 1) if N > gen else 1
    padded_len = (nchunks - 1) * step + spec.chunk
    mp = torch.zeros(2, padded_len)
    mp[:, trim: trim + N] = mix
    out = torch.zeros(n_out, 2, padded_len)
    wsum = torch.zeros(padded_len)
    w = torch.hann_window(gen + 2, periodic=False)[1:-1] if nchunks > 1 else torch.ones(gen)
    starts = [i * step for i in range(nchunks)]
    with torch.no_grad():
        for b0 in range(0, nchunks, batch):
            ss = starts[b0: b0 + batch]
            x = torch.stack([mp[:, s: s + spec.chunk] for s in ss])
            X = spec.stft(x)
            Y = run(X)
            if Y.dim() == 4:
                Y = Y[:, None]
            y = spec.istft(Y, length=spec.chunk)  # [B, S, 2, chunk]
            for k, s in enumerate(ss):
                wk = w.clone()
                if b0 + k == 0:  # first chunk: flat left half (signal start)
                    wk[: gen // 2] = 1.0
                if b0 + k == nchunks - 1:  # last chunk: flat right half
                    wk[gen // 2:] = 1.0
                out[:, :, s + trim: s + trim + gen] += y[k, :, :, trim: trim + gen] * wk
                wsum[s + trim: s + trim + gen] += wk
    out = out / wsum.clamp_min(1e-8)
    return out[:, :, trim: trim + N]


def sdr(ref, est):
    ref = np.asarray(ref, np.float64)
    est = np.asarray(est, np.float64)
    num = np.sum(ref**2)
    den = np.sum((ref - est) ** 2)
    return 10 * np.log10((num + 1e-12) / (den + 1e-12))


# ------------------------------------------------------------------ network
class ConvBN(nn.Sequential):
    def __init__(self, cin, cout, k, s=(1, 1), p=None):
        if p is None:
            p = (k[0] // 2, k[1] // 2)
        super().__init__(nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class TBlock(nn.Module):
    def __init__(self, c, d):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3, padding=d, dilation=d, bias=False)
        self.bn = nn.BatchNorm1d(c)

    def forward(self, x):
        return x + F.relu(self.bn(self.conv(x)))


ECHO_GAIN = 10.0
ECHO_INIT = 2.0


class MaskNet(nn.Module):
    """Conv encoder (strided in frequency only) -> dilated temporal conv stack
    over flattened (channel x freq) features -> conv decoder with skips ->
    per-channel real masks applied to the complex input inside the graph."""

    def __init__(self, dim_f, n_stems=1, chans=(24, 40, 56, 80), fstrides=(4, 2, 2, 2),
                 tch=256, dilations=(1, 2, 4, 8, 16, 32, 1, 2, 4, 8), refine=False,
                 refine_ch=12, refine_k=(5, 3), cross=False, ipd=False, echo=False, echo_lags=(3, 40)):
        super().__init__()
        self.refine = refine
        self.cross = cross
        # inter-channel phase at the input: cos and sin of the phase difference between L and R per
        # bin. The magnitudes (L, R, mid, side) fix only its cosine; its sine tells an amplitude-panned
        # voice (L and R in phase) from the decorrelated stereo reverb. The weights from these two
        # input channels are zero-initialised when --init loads a network without them (load_widened).
        self.ipd = ipd
        # echo features at the input (echo_features): a feedback echo is a late, darker copy of the
        # voice at one delay, so a network that sees only a frame's neighbours cannot tell it from the
        # voice; these give it, per bin, the share an echo of the frame one delay earlier would have.
        # Their input weights are zero-initialised as for the phase features (eproj below is not).
        self.echo, self.echo_lags = echo, tuple(echo_lags)
        nin = 4 + (2 if ipd else 0) + (2 if echo else 0)
        self.dim_f, self.n_stems = dim_f, n_stems
        self.enc = nn.ModuleList()
        cin, f = nin, dim_f
        for c, s in zip(chans, fstrides):
            k = (2 * s if s > 1 else 3, 3)
            p = ((k[0] - s) // 2, 1)
            self.enc.append(ConvBN(cin, c, k, (s, 1), p))
            cin, f = c, f // s
        self.fb = f
        self.cb = cin
        self.inp = nn.Sequential(nn.Conv1d(cin * f, tch, 1, bias=False), nn.BatchNorm1d(tch), nn.ReLU())
        self.tcn = nn.Sequential(*[TBlock(tch, d) for d in dilations])
        self.outp = nn.Sequential(nn.Conv1d(tch, cin * f, 1, bias=False), nn.BatchNorm1d(cin * f), nn.ReLU())
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        rc = list(chans)
        for i in range(len(chans) - 1, 0, -1):
            s = fstrides[i]
            self.up.append(nn.ConvTranspose2d(rc[i], rc[i - 1], (s, 1), (s, 1)))
            self.dec.append(ConvBN(rc[i - 1], rc[i - 1], (3, 3)))
        self.head = nn.ConvTranspose2d(chans[0], 2 * n_stems, (fstrides[0], 1), (fstrides[0], 1))
        # complex correction of the masks (re/im for L and R per stem),
        # zero-initialised so training starts from a pure real-mask model
        self.chead = nn.ConvTranspose2d(chans[0], 4 * n_stems, (fstrides[0], 1), (fstrides[0], 1))
        nn.init.zeros_(self.chead.weight)
        nn.init.zeros_(self.chead.bias)
        if refine:
            # full-resolution refinement: decoder features brought back to
            # every bin, next to that bin's own input features, so masks can
            # follow single harmonics; the output layer is zero-initialised,
            # so adding it to a trained network leaves the function unchanged
            rc0 = refine_ch
            kf, kt = refine_k
            self.rup = nn.ConvTranspose2d(chans[0], rc0, (fstrides[0], 1), (fstrides[0], 1))
            self.rconv = nn.Sequential(nn.Conv2d(rc0 + nin, rc0, (kf, kt), padding=(kf // 2, kt // 2)), nn.ReLU())
            self.rout = nn.Conv2d(rc0, 6 * n_stems, 1)
            nn.init.zeros_(self.rout.weight)
            nn.init.zeros_(self.rout.bias)
        if echo:
            # and straight to the mask logits: a new input reaches the masks through zero-initialised
            # weights that move by about the learning rate per step, too slowly for a feature that is
            # itself nearly a mask (measured: 10 minutes of training moved the reverb's logit by 0.35 x
            # the proposal). This 1x1 layer (scaled by ECHO_GAIN, so it learns ten times faster) starts
            # with the last stem's (the reverb's) logits at ECHO_INIT x the proposal, the rest at zero.
            self.eproj = nn.Conv2d(2, 2 * n_stems, 1)
            nn.init.zeros_(self.eproj.weight)
            nn.init.zeros_(self.eproj.bias)
            with torch.no_grad():
                self.eproj.weight[-2:, 0] = ECHO_INIT / ECHO_GAIN
        if cross:
            # cross-channel terms: each output channel also takes a complex multiple of the other
            # input channel (a 2x2 complex filter per bin instead of one mask per channel), so a
            # stem can be estimated from the inter-channel difference: a panned dry voice cancels
            # in L - gR, the decorrelated stereo reverb does not. Zero-initialised (a network
            # without them loads unchanged, --init) like the refinement block.
            self.xhead = nn.ConvTranspose2d(chans[0], 4 * n_stems, (fstrides[0], 1), (fstrides[0], 1))
            nn.init.zeros_(self.xhead.weight)
            nn.init.zeros_(self.xhead.bias)
            if refine:
                self.rxout = nn.Conv2d(refine_ch, 4 * n_stems, 1)
                nn.init.zeros_(self.rxout.weight)
                nn.init.zeros_(self.rxout.bias)

    def echo_features(self, mag):
        """mag: the channels' magnitudes [B, 2, F, T] -> [B, 2, F, T]: an echo mask proposed from the
        chunk's echo delay, and how clearly the onsets repeat at that delay (one value per chunk, on
        every bin). The delay is the lag (in frames) at which the onsets correlate best; the echo's gain
        g is the least-squares gain of the onsets on themselves that many frames earlier; the proposal
        is, per bin, min(1, g |X(t - lag)| / |X(t)|): the share of the bin that an echo of the earlier
        frame would be. The confidence is the best correlation above its mean over all lags (a voice's
        own syllable rhythm correlates at many lags, an echo at its own)."""
        B, _, Fq, T = mag.shape
        a = mag.mean(1)  # [B, F, T]
        diff = lambda v: F.pad(F.relu(v[:, :, 1:] - v[:, :, :-1]), (1, 0))
        on, onl = diff(torch.pow(a, 0.3)), diff(a)  # onsets: compressed (to find the lag) and linear (its gain)
        lags = range(self.echo_lags[0], self.echo_lags[1] + 1)
        T = int(T)  # a constant in the exported graph (its chunks are dim_t frames), for the strided slices

        def lagged(o):
            # per lag k: sum over bins and t of o(t) o(t - k), of o(t)^2 for t >= k and of o(t - k)^2, from one
            # Gram matrix over frames (its k-th lower diagonal, a strided slice of it flattened) and the
            # running sum of its diagonal, instead of a product of the whole chunk per lag
            gram = torch.matmul(o.transpose(1, 2), o)  # [B, T, T]: sum over bins of o(t1) o(t2)
            flat = gram.reshape(B, T * T)
            cross = torch.stack([flat[:, k * T:: T + 1].sum(1) for k in lags], 1)  # [B, lags]
            run = torch.cumsum(flat[:, :: T + 1], 1)  # [B, T]: sum of o^2 over frames 0..t
            late = run[:, -1:] - run[:, [k - 1 for k in lags]]  # frames k..T-1
            early = run[:, [T - 1 - k for k in lags]]  # frames 0..T-1-k
            return cross, late, early

        cross, late, early = lagged(on)
        score = cross / torch.sqrt(late * early + 1e-8)  # [B, lags]
        cross, _, early = lagged(onl)
        gain = cross / (early + 1e-8)
        peak, k = score.max(1)
        g = torch.gather(gain, 1, k[:, None])[:, :, None]  # [B, 1, 1]
        lag = (k + self.echo_lags[0])[:, None, None]
        t = torch.arange(T, device=mag.device)[None, None, :]
        src = (t - lag).clamp(min=0).expand(B, Fq, T)
        earlier = torch.gather(a, 2, src) * (t >= lag).to(a.dtype)
        proposal = torch.clamp(g * earlier / (a + 1e-6), 0.0, 1.0)
        conf = (peak - score.mean(1))[:, None, None].expand(B, Fq, T)
        return torch.stack([proposal, conf], 1)

    def forward(self, x):
        # x: [B, 4, F, T] = L.re L.im R.re R.im
        B, _, Fq, T = x.shape
        mag = torch.sqrt(x[:, 0::2] ** 2 + x[:, 1::2] ** 2 + 1e-8)  # [B,2,F,T]
        mid = torch.sqrt((x[:, 0] + x[:, 2]) ** 2 + (x[:, 1] + x[:, 3]) ** 2 + 1e-8) * 0.5
        side = torch.sqrt((x[:, 0] - x[:, 2]) ** 2 + (x[:, 1] - x[:, 3]) ** 2 + 1e-8) * 0.5
        h = torch.cat([mag, mid[:, None], side[:, None]], 1)
        h = torch.pow(h, 0.3)
        if self.ipd:
            lr = mag[:, 0] * mag[:, 1]  # |L| |R| (> 0)
            cos = (x[:, 0] * x[:, 2] + x[:, 1] * x[:, 3]) / lr  # Re(L conj(R)) / (|L| |R|)
            sin = (x[:, 1] * x[:, 2] - x[:, 0] * x[:, 3]) / lr  # Im(L conj(R)) / (|L| |R|)
            h = torch.cat([h, cos[:, None], sin[:, None]], 1)
        if self.echo:
            ef = self.echo_features(mag)
            h = torch.cat([h, ef], 1)
        h0 = h
        skips = []
        for e in self.enc:
            h = e(h)
            skips.append(h)
        z = h.reshape(B, self.cb * self.fb, T)
        z = self.inp(z)
        z = self.tcn(z)
        z = self.outp(z).reshape(B, self.cb, self.fb, T)
        h = z + skips[-1]
        for i, (u, d) in enumerate(zip(self.up, self.dec)):
            h = u(h) + skips[-2 - i]
            h = d(h)
        m = self.head(h)  # [B, 2*S, F, T] real mask logits (L, R per stem)
        if self.echo:
            m = m + ECHO_GAIN * self.eproj(ef)
        c = self.chead(h)  # [B, 4*S, F, T] complex corrections (pre-tanh)
        S = self.n_stems
        if self.cross:
            xc = self.xhead(h)  # [B, 4*S, F, T] L<-R re, im, R<-L re, im
        if self.refine:
            r = torch.relu(self.rup(h))
            r = self.rconv(torch.cat([r, h0], 1))
            if self.cross:
                xc = xc + self.rxout(r)
            r = self.rout(r)
            m = m + r[:, : 2 * S]
            c = c + r[:, 2 * S:]
        c = torch.tanh(c)
        m = m.reshape(B, S, 2, Fq, T)
        c = c.reshape(B, S, 4, Fq, T)
        if self.cross:
            xc = torch.tanh(xc).reshape(B, S, 4, Fq, T)
        if S == 1:
            p = torch.sigmoid(m)
        else:
            p = torch.softmax(m, dim=1)
            c = c - c.mean(dim=1, keepdim=True)  # keep sum of stems == mixture
            if self.cross:
                xc = xc - xc.mean(dim=1, keepdim=True)
        # complex mask per stem and channel: (p + c_re) + i c_im
        mr = torch.stack([p[:, :, 0] + c[:, :, 0], p[:, :, 1] + c[:, :, 2]], 2)  # [B,S,2,F,T]
        mi = torch.stack([c[:, :, 1], c[:, :, 3]], 2)
        xr = x[:, None, 0::2]  # [B,1,2,F,T] (L.re, R.re)
        xi = x[:, None, 1::2]
        yr = xr * mr - xi * mi
        yi = xr * mi + xi * mr
        if self.cross:
            # the other channel's input (R for the L output, L for the R output) times the cross term
            orr = x[:, None, [2, 0]]  # [B,1,2,F,T] (R.re, L.re)
            oi = x[:, None, [3, 1]]
            xr_ = torch.stack([xc[:, :, 0], xc[:, :, 2]], 2)
            xi_ = torch.stack([xc[:, :, 1], xc[:, :, 3]], 2)
            yr = yr + orr * xr_ - oi * xi_
            yi = yi + orr * xi_ + oi * xr_
        y = torch.stack([yr, yi], 3).reshape(B, S, 4, Fq, T)  # L.re L.im R.re R.im
        if S == 1:
            return y[:, 0]
        return y


def net_from_cfg(cfg):
    """The MaskNet a checkpoint's cfg describes (older checkpoints lack the newer keys)."""
    return MaskNet(cfg["dim_f"], cfg["n_stems"], tch=cfg.get("tch", 256), refine=cfg.get("refine", False),
                   refine_ch=cfg.get("refine_ch", 12), refine_k=tuple(cfg.get("refine_k", (5, 3))),
                   cross=cfg.get("cross", False), ipd=cfg.get("ipd", False),
                   echo=cfg.get("echo", False))


@torch.no_grad()
def load_widened(net, state):
    """Loads `state` into `net` whose temporal stack may be wider (tch) than
    the checkpoint's, keeping the function unchanged: old channels are copied,
    nothing reads the new channels yet (weights from them are 0), while the
    weights into them keep their random init, so the new channels carry
    features from the start and training can grow their use.
    Returns the keys not in `state` (e.g. a newly added refinement block)."""
    own = net.state_dict()
    for k, v in state.items():
        if k not in own:
            raise KeyError("checkpoint key %s not in the network" % k)
        t = own[k]
        if t.shape == v.shape:
            t.copy_(v)
            continue
        if t.dim() != v.dim() or any(a < b for a, b in zip(t.shape, v.shape)):
            raise ValueError("cannot widen %s from %s to %s" % (k, tuple(v.shape), tuple(t.shape)))
        old = tuple(slice(0, n) for n in v.shape)
        if k.startswith("tcn.") and k.endswith("conv.weight"):
            t[:, v.shape[1]:] = 0  # new -> any
        elif k in ("outp.0.weight", "enc.0.0.weight", "rconv.0.weight"):
            t[:, v.shape[1]:] = 0  # nothing reads the new channels (or the new input features) yet
        elif k.endswith("running_var"):
            t.fill_(1)
        elif k.endswith("running_mean") or k.endswith("bias"):
            t.zero_()
        t[old] = v
    return [k for k in own if k not in state]


@torch.no_grad()
def load_onnx(net, path):
    """Loads the weights of a MaskNet exported by export_onnx.py back into `net` (same cfg), for
    fine-tuning a committed model whose checkpoint is gone. The export fused every BatchNorm
    into the convolution before it, so each BatchNorm becomes the identity plus the fused bias
    (running mean 0, running variance 1 - eps, scale 1): the network computes what the ONNX file
    computes as long as the BatchNorms stay in eval mode (freeze_bn). A network with another
    number of stems takes everything but its output layers, which keep their init (returned:
    the layers skipped)."""
    import onnx
    from onnx import numpy_helper

    if net.cross or net.ipd or net.echo:
        raise ValueError("load_onnx reads networks without cross-channel terms or phase and echo features (add them with --init)")
    model = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    convs = [n for n in model.graph.node if n.op_type in ("Conv", "ConvTranspose")]
    # the convolutions in the order forward() runs them (the order of the traced graph)
    slots = [("Conv", e[0], e[1]) for e in net.enc] + [("Conv", net.inp[0], net.inp[1])]
    slots += [("Conv", t.conv, t.bn) for t in net.tcn] + [("Conv", net.outp[0], net.outp[1])]
    for u, d in zip(net.up, net.dec):
        slots += [("ConvTranspose", u, None), ("Conv", d[0], d[1])]
    slots += [("ConvTranspose", net.head, None), ("ConvTranspose", net.chead, None)]
    if net.refine:
        slots += [("ConvTranspose", net.rup, None), ("Conv", net.rconv[0], None), ("Conv", net.rout, None)]
    if len(slots) != len(convs):
        raise ValueError("%s has %d convolutions, the network %d: not this cfg" % (path, len(convs), len(slots)))
    heads = (net.head, net.chead) + ((net.rout,) if net.refine else ())
    skipped = []
    for (op, conv, bn), node in zip(slots, convs):
        w = inits[node.input[1]]
        b = inits[node.input[2]] if len(node.input) > 2 else np.zeros(w.shape[1 if op == "ConvTranspose" else 0], np.float32)
        if node.op_type == op and conv in heads and w.shape[0 if op == "Conv" else 1] != conv.weight.shape[
                0 if op == "Conv" else 1]:
            skipped.append(op)  # another number of stems: the output layers keep their init
            continue
        if node.op_type != op or tuple(w.shape) != tuple(conv.weight.shape):
            raise ValueError("%s: %s %s where the network has %s %s" % (path, node.op_type, w.shape, op,
                                                                      tuple(conv.weight.shape)))
        conv.weight.copy_(torch.from_numpy(np.array(w)))
        if bn is None:
            conv.bias.copy_(torch.from_numpy(np.array(b)))
        else:
            bn.weight.fill_(1)
            bn.bias.copy_(torch.from_numpy(np.array(b)))
            bn.running_mean.zero_()
            bn.running_var.fill_(1 - bn.eps)
    return skipped


def freeze_bn(net):
    """BatchNorms in eval mode (running statistics; scale and bias still train)."""
    for m in net.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eval()


def count_params(m):
    return sum(p.numel() for p in m.parameters())
