// heads.wgsl — the action heads' distributions, written once for the three files that include it:
// sample.wgsl (the rollout's log-probabilities), advantage.wgsl (V-trace's new log-probabilities) and
// ppo.wgsl (log-probabilities, entropies and their gradients).
//
//   discrete head (size ≥ 2, columns o .. o+size of a row of out):
//     l_j = out[row + o + j], or MASKED_LOGIT = −1e4 where the action mask says j is illegal
//     x = max_j l_j;  Σ = Σ_j exp(l_j − x);  y = log Σ
//     log p_j = (l_j − x) − y;  p_j = exp(log p_j);  H = −Σ_j p_j·log p_j
//   continuous head (size 1, the k-th such head, column o):
//     μ = clamp(out[row + o], ±MU_MAX);  s = clamp(logstd[k], LOGSTD_MIN, LOGSTD_MAX);  σ = eˢ
//     a = clamp(action, ±MU_MAX);  log p(a) = −½((a − μ)/σ)² − ½log 2π − s;  H = ½(1 + log 2π) + s
//   A row's log-probability and entropy are sums over its heads in head order (the includer's loop).
//
// Why (l_j − x) − y and not l_j − (x + y): for a fully masked head x = −1e4, whose ulp is ~1e-3, so
// x + y would round log(size) away; (l_j − x) is exactly 0 there and log p_j = −log(size) exactly.
// Every includer uses this one order, so the rollout's log-probability and the learner's agree bit for
// bit on the same logits, and a mask with every choice legal gives the results of no mask.
//
// Declares no bindings and no Params. Each includer declares, with these names:
//   out: array<f32> (the decoder output), mask: array<u32> (bit j of word w = column 32·w + j legal),
//   logstd: array<f32> (one log std per continuous head), and `p: Params` with the fields
//   masked (1: read mask; 0: every column legal) and logstd_off.
// Index arguments are explicit because the includers index differently (sample.wgsl by agent, the
// others by minibatch element): row = index in out of the row's column 0 (offset included); mrow =
// index in mask of the row's first word (offset included; not read when masked = 0).

const MASKED_LOGIT: f32 = -1e4;  // PufferLib's value for an illegal choice: a fully masked head stays finite (uniform)
const MU_MAX: f32 = 1e6;         // a Gaussian mean or action beyond this is clamped (keeps (a − μ)² finite)
const LOGSTD_MIN: f32 = -20.0;   // PufferLib's log-std bounds
const LOGSTD_MAX: f32 = 2.0;
const HALF_LOG_2PI: f32 = 0.9189385332046727;        // ½·log 2π
const HALF_1_PLUS_LOG_2PI: f32 = 1.4189385332046727; // ½·(1 + log 2π), a unit Gaussian's entropy

// whether column col of the row whose mask words start at mrow is a legal choice
fn head_legal(mrow: u32, col: u32) -> bool {
    if (p.masked == 0u) { return true; }
    return ((mask[mrow + col / 32u] >> (col % 32u)) & 1u) != 0u;
}

// the logit of column col as the distribution sees it (illegal → MASKED_LOGIT)
fn head_logit(row: u32, mrow: u32, col: u32) -> f32 {
    return select(MASKED_LOGIT, out[row + col], head_legal(mrow, col));
}

// One discrete head's normaliser: mx = x (the largest logit), sum = Σ, log_sum = y.
struct Softmax { mx: f32, sum: f32, log_sum: f32 }

fn head_softmax(row: u32, mrow: u32, o: u32, size: u32) -> Softmax {
    var mx = head_logit(row, mrow, o);
    for (var j = 1u; j < size; j++) { mx = max(mx, head_logit(row, mrow, o + j)); }
    var total = 0.0;
    for (var j = 0u; j < size; j++) { total += exp(head_logit(row, mrow, o + j) - mx); }
    return Softmax(mx, total, log(total));
}

// log p of column col under its head's softmax sm
fn head_logp(row: u32, mrow: u32, col: u32, sm: Softmax) -> f32 {
    return (head_logit(row, mrow, col) - sm.mx) - sm.log_sum;
}

// H = −Σ_j p_j·log p_j of the head at columns o .. o+size
fn head_entropy(row: u32, mrow: u32, o: u32, size: u32, sm: Softmax) -> f32 {
    var ent = 0.0;
    for (var j = 0u; j < size; j++) {
        let lpj = head_logp(row, mrow, o + j, sm);
        ent -= exp(lpj) * lpj;
    }
    return ent;
}

// the clamped mean μ of the continuous head at column o, its clamped log std s (the k-th continuous
// head), and a clamped action
fn gaussian_mu(row: u32, o: u32) -> f32 { return clamp(out[row + o], -MU_MAX, MU_MAX); }
fn gaussian_logstd(k: u32) -> f32 { return clamp(logstd[p.logstd_off + k], LOGSTD_MIN, LOGSTD_MAX); }
fn gaussian_clamp(a: f32) -> f32 { return clamp(a, -MU_MAX, MU_MAX); }

// log p(a) of N(μ, e^2s) for a clamped action a
fn gaussian_logp(a: f32, mu: f32, s: f32) -> f32 {
    let z = (a - mu) / exp(s);
    return -0.5 * z * z - HALF_LOG_2PI - s;
}

fn gaussian_entropy(s: f32) -> f32 { return HALF_1_PLUS_LOG_2PI + s; }
