#include "backends/tpu_emu/layout.h"

#include <algorithm>

namespace mimic::backends::tpu_emu {

using models::tpu::VpuSpec;
using models::tpu::Window;

int64_t tiled_elements(const std::vector<int64_t>& dims, const VpuSpec& v) {
  if (dims.empty()) return tiled_elements(1, 1, v);
  int64_t cols = dims.back(), rows = dims.size() >= 2 ? dims[dims.size() - 2] : 1, lead = 1;
  for (size_t i = 0; i + 2 < dims.size(); ++i) lead *= dims[i];
  return lead * tiled_elements(rows, cols, v);
}

int64_t batch_minor_elements(const std::vector<int64_t>& dims, const VpuSpec& v) {
  return round_up(dims[0], v.lanes) * dims[1] * dims[2] * round_up(dims[3], v.sublanes);
}

namespace {

// The batch's padding to the lanes of a batch-minor window's tile bytes.
int64_t batch_padded(const Window& w, int64_t bytes, const VpuSpec& v) {
  return w.batch_minor && w.n > 0 ? bytes * round_up(w.n, v.lanes) / w.n : bytes;
}

// Calls fn(image, oh_first, oh_last) for every image a row range of M = n*oh*ow spans.
template <typename Fn>
void for_images(const Window& w, int64_t r0, int64_t r1, Fn fn) {
  if (r1 <= r0) return;
  int64_t ohw = w.oh * w.ow;
  int64_t first = r0 / ohw, last = (r1 - 1) / ohw;
  for (int64_t img = first; img <= last; ++img) {
    int64_t a = std::max(r0, img * ohw) - img * ohw,
            b = std::min(r1, (img + 1) * ohw) - 1 - img * ohw;
    fn(img, a / w.ow, b / w.ow);
  }
}

int64_t input_rows_for(const Window& w, int64_t oh0, int64_t oh1) {
  int64_t lo = std::max<int64_t>(0, oh0 * w.sh - w.ph);
  int64_t hi = std::min<int64_t>(w.h - 1, oh1 * w.sh - w.ph + (w.kh - 1) * w.dh);
  return std::max<int64_t>(0, hi - lo + 1);
}

}  // namespace

int64_t conv_input_tile_bytes(const Window& w, int64_t r0, int64_t r1, int64_t channels,
                              int64_t element_bytes, const VpuSpec& v, int64_t* runs) {
  int64_t bytes = 0, pieces = 0;
  for_images(w, r0, r1, [&](int64_t, int64_t a, int64_t b) {
    int64_t rows = input_rows_for(w, a, b);
    if (w.channels_last && w.batch_minor) {
      bytes += rows * w.w * round_up(channels, v.sublanes) * element_bytes;
      pieces += channels < w.c ? rows * w.w : 1;
    } else if (w.channels_last) {
      bytes += rows * round_up(w.w, v.sublanes) * round_up(channels, v.lanes) * element_bytes;
      pieces += channels < w.c ? rows * w.w : 1;
    } else {
      bytes += channels * tiled_elements(rows, w.w, v) * element_bytes;
      pieces += channels;
    }
  });
  if (runs) *runs = std::max<int64_t>(pieces, 1);
  return batch_padded(w, bytes, v);
}

int64_t conv_output_tile_bytes(const Window& w, int64_t r0, int64_t r1, int64_t channels,
                               int64_t element_bytes, const VpuSpec& v, int64_t* runs) {
  int64_t bytes = 0, pieces = 0;
  for_images(w, r0, r1, [&](int64_t, int64_t a, int64_t b) {
    int64_t rows = b - a + 1;
    if (w.channels_last && w.batch_minor) {
      bytes += rows * w.ow * round_up(channels, v.sublanes) * element_bytes;
      pieces += 1;
    } else if (w.channels_last) {
      bytes += rows * round_up(w.ow, v.sublanes) * round_up(channels, v.lanes) * element_bytes;
      pieces += 1;
    } else {
      bytes += channels * tiled_elements(rows, w.ow, v) * element_bytes;
      pieces += channels;
    }
  });
  if (runs) *runs = std::max<int64_t>(pieces, 1);
  return batch_padded(w, bytes, v);
}

}  // namespace mimic::backends::tpu_emu
