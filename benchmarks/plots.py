"""Self-contained SVG line charts for the benchmark results (no plotting library on the machines)."""
import math

COLORS = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#455a64"]


def _log_ticks(lo, hi):
    return list(range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1))


def log_log_lines(series, x_label, y_label, title, width=640, height=380):
    """series: {name: [(x, y), ...]} with x, y > 0, drawn on log-log axes with a legend."""
    pts = [p for values in series.values() for p in values if p[0] > 0 and p[1] > 0]
    if not pts:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="40"><text y="20">{title}: no data</text></svg>'
    left, right, top, bottom = 70, 190, 30, 45
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x_ticks, y_ticks = _log_ticks(min(xs), max(xs)), _log_ticks(min(ys), max(ys))
    x0, x1 = x_ticks[0], max(x_ticks[-1], x_ticks[0] + 1)
    y0, y1 = y_ticks[0], max(y_ticks[-1], y_ticks[0] + 1)
    fx = lambda x: left + (math.log10(x) - x0) / (x1 - x0) * (width - left - right)
    fy = lambda y: height - bottom - (math.log10(y) - y0) / (y1 - y0) * (height - top - bottom)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13" font-weight="bold">{title}</text>',
           f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" fill="none" stroke="#999"/>']
    for e in range(x0, x1 + 1):
        x = fx(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - bottom}" stroke="#eee"/>'
                   f'<text x="{x:.1f}" y="{height - bottom + 14}" text-anchor="middle">1e{e}</text>')
    for e in range(y0, y1 + 1):
        y = fy(10 ** e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
    for i, (name, values) in enumerate(sorted(series.items())):
        color = COLORS[i % len(COLORS)]
        values = sorted(p for p in values if p[0] > 0 and p[1] > 0)
        path = " L".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in values)
        out.append(f'<path d="M{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        out += [f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="2.5" fill="{color}"/>' for x, y in values]
        ly = top + 14 + 16 * i
        out.append(f'<line x1="{width - right + 10}" y1="{ly - 4}" x2="{width - right + 28}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>'
                   f'<text x="{width - right + 32}" y="{ly}">{name}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle">{x_label} (log)</text>'
               f'<text transform="translate(14,{(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle">{y_label} (log)</text>')
    out.append("</svg>")
    return "\n".join(out)
