// The batch-norm recogniser: finds batch-norm inference in a Graph (graph.hpp) in every form the
// front ends produce and recovers gamma, beta, mean, var, eps, the channel axis and a trailing
// activation, so that the layer can be folded (fold.hpp) and run as one per-channel multiply-add.
//
// How it works. One forward pass over the nodes gives every value a symbolic form:
//   parameter  a tensor computed from constants and parameter inputs only, as a sum of monomials
//              over "atoms": parameter leaves (constants, graph inputs of rank <= 1), sqrt(...) of
//              a parameter expression, and opaque functions (max, min, pow with other exponents,
//              ...); rsqrt(u) = sqrt(u)^-1, pow(u, -0.5) = sqrt(u)^-1, reciprocal / div invert a
//              monomial; reshape / broadcast / identity / convert only move the varying axis.
//   affine     x * A + B for one data tensor x, A and B parameter expressions (built while the
//              chain add / sub / mul / div / neg / explicit bn walks away from x).
//   data       anything else (graph inputs of rank >= 2, conv outputs, ...).
// A chain extends through a value only while that value has one consumer and is not a graph
// output; it may end in an activation with scalar constant bounds, fused into the clamp:
// relu / max(x, 0) -> "relu"; max(x, 0) (or relu) and min(., 6) as separate ops (jax.nn.relu6,
// tf.nn.relu6) -> "relu6"; a clamp op (ONNX Clip, HLO clamp, also with bounds 0 and 6) or any
// other bounds -> "clamp" {min, max} (a missing side is the lowest / largest double). Every chain
// end with a per-channel parameter that looks like a batch norm
// (an explicit bn node, an inverse sqrt in A, or a per-channel multiply and a per-channel add)
// becomes a BnMatch; A and B are then read back as
//   A = gamma * sqrt(var + eps)^-1       (gamma: the other factors; eps: the scalar terms)
//   B = beta - mean * A                  (mean: the terms that are A times one more leaf)
// which covers mean subtracted before or after scaling, gamma before or after the rsqrt, missing
// gamma / beta, and fully precomputed x * s + t (gamma = s, beta = t, mean = 0, var = 1,
// eps = 0). Whatever the structure, the recovered parameters reproduce the evaluated A and B
// (checked numerically; if not, gamma = A, beta = B is used and a warning says so).
//
// Near misses (reported, never folded): a parameter that is not per-channel (varies along more
// than one axis, e.g. shape [1,C,H,W] or a full tensor), a multiply or divide by a non-constant
// tensor inside the chain (when the multiply by data is the chain's last op, e.g. an SE-style
// gate after the BN, the chain just ends before it and the BN is recognised), a vector whose
// length differs from the channel dimension, parameters along different axes, and a BN in
// training mode (a bn node with training_mode != 0 or its batch-statistics outputs in use, an
// HLO batch-norm-training; the ONNX front end itself rejects training_mode=1 with an Error).
//
// A Conv / Gemm / MatMul before the BN is left alone: the BN's input is the conv output. An add of
// a per-channel vector directly on a conv / matmul output (or on a reshape of it, as TOSA's 3-d
// matmul has) is taken as that layer's bias (it stays with the conv), so the ONNX (bias inside
// Conv) and HLO / TOSA (separate add) forms agree.
//
// Parameters read back with a NaN or negative variance, an infinite mean or a negative eps are
// kept as read (not replaced by gamma = A, beta = B), so the plan's check names that field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "normcore/bn_params.hpp"
#include "normcore/contract.hpp"
#include "normcore/import/graph.hpp"

namespace normcore::import {

struct BnMatch {
  std::string name;  // layer name: unique, file-name safe ([A-Za-z0-9_.-])
  // "batchnorm" (explicit BN node), "decomposed" (x - mean first, then the scale),
  // "folded-shift" (x * s + (beta - mean * s)), "scale-shift" (no sqrt: x * s + t with
  // precomputed s, t), "affine" (structure not read back; gamma = A, beta = B).
  std::string pattern;
  std::string ops;                     // the data-path ops in order, e.g. "sub,mul,mul,add,relu"
  int input = -1;                      // value index of x
  int output = -1;                     // value index of the result (after the fused activation)
  std::vector<int> nodes;              // every node of the BN (data and parameter path)
  std::vector<std::string> locations;  // their locations, data path first
  std::string location;                // location of the first data-path node

  std::vector<std::int64_t> shape;  // x's shape (-1: unknown dimension; empty: unknown rank)
  int channel_axis = -1;            // axis of x holding the channels
  std::int64_t channels = 0;
  Layout layout = Layout::nchw;  // nhwc when the channel axis is the last of rank >= 3

  // Parameter leaves by role (value index; -1 if absent or not one plain value, e.g. a
  // precomputed product). Used to map unnamed parameters to bundle keys.
  int gamma_value = -1, beta_value = -1, mean_value = -1, var_value = -1, eps_value = -1;
  std::vector<int> leaves;  // every non-scalar-constant parameter value the BN reads

  std::string activation = "none";  // none | relu | relu6 | clamp
  double act_min = 0, act_max = 0;  // for clamp (unbounded side: lowest / max double)

  // True when every leaf has data: params then holds gamma, beta, mean, var, eps and the
  // activation (quantisation is left to the caller), and eps the recovered epsilon.
  bool complete = false;
  BnParams params;
  double eps = 0;
  std::vector<std::string> missing;  // leaves without data, described ("parameter(2) 'p2'")
  std::vector<std::string> warnings;
};

struct NearMiss {
  std::string reason;              // why it is not a BN
  std::string location;            // the offending node
  std::vector<std::string> nodes;  // the chain's data-path locations
  int output = -1;                 // value where the chain ended
};

struct Recognition {
  std::vector<BnMatch> layers;  // in graph order
  std::vector<NearMiss> near_misses;
  // Without layers: what the graph has instead ("no batch norm: the layer at node 'conv1'
  // (Conv) ... may already include it: exporters fold ..."); "" when layers were found.
  std::string note;
};

Recognition recognise(const Graph& g);

// "'name' (origin)" for messages.
std::string describe_value(const Graph& g, int value);

}  // namespace normcore::import
