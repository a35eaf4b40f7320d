// ops.h -> math.h -> approx.h -> constants.h: three includes deep.
#pragma once

namespace consumer::detail {

constant constexpr float kHalf = 0.5f;
constant constexpr float kScale = 2.0f;

}  // namespace consumer::detail
