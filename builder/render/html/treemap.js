/* Squarified treemap layout (after Bruls, Huizing and van Wijk, 2000).
 * Pure: values (sorted largest first, all > 0) and a rectangle in, one rectangle per value out.
 * Rows are laid along the shorter side of the space left; a value joins the current row while
 * that does not make the row's worst aspect ratio worse, which keeps the cells close to square
 * (readable labels, comparable areas). */
var Treemap = (function () {
  'use strict';

  function worst(sum, min, max, side) {
    var s2 = sum * sum, side2 = side * side;
    return Math.max((side2 * max) / s2, s2 / (side2 * min));
  }

  function squarify(values, x, y, w, h) {
    var out = new Array(values.length);
    var total = 0, i;
    for (i = 0; i < values.length; i++) total += values[i];
    if (!(total > 0) || w <= 0 || h <= 0) return out;
    var scale = (w * h) / total;
    i = 0;
    while (i < values.length) {
      var side = Math.min(w, h);
      var sum = 0, min = Infinity, max = 0, best = Infinity, j = i;
      while (j < values.length) {
        var area = values[j] * scale;
        var s = sum + area, mn = Math.min(min, area), mx = Math.max(max, area);
        var ratio = worst(s, mn, mx, side);
        if (j > i && ratio > best) break;
        sum = s; min = mn; max = mx; best = ratio; j++;
      }
      var thick = side > 0 ? sum / side : 0;
      var k, pos, len;
      if (w >= h) {               // the row is a column at the left edge
        for (k = i, pos = y; k < j; k++, pos += len) {
          len = (values[k] * scale) / thick;
          out[k] = { x: x, y: pos, w: thick, h: len };
        }
        x += thick; w -= thick;
      } else {                    // the row is a strip along the top edge
        for (k = i, pos = x; k < j; k++, pos += len) {
          len = (values[k] * scale) / thick;
          out[k] = { x: pos, y: y, w: len, h: thick };
        }
        y += thick; h -= thick;
      }
      i = j;
    }
    return out;
  }

  return { squarify: squarify };
})();
