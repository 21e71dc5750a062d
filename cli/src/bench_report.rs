//! Benchmark reports: tilec's timings joined with the peers' (anchors.py JSON of the same
//! GPU run) into one markdown table with ratios, and one SVG plot per kernel class.

use crate::gpu::BenchRow;
use plotters::prelude::*;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::Path;

/// One row of anchors.py's JSON.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
pub struct PeerRow {
    pub kernel: String,
    pub provider: String,
    pub config: String,
    pub ms: f64,
    pub tflops: Option<f64>,
    pub gbps: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
struct Anchors {
    results: Vec<PeerRow>,
}

/// Reads anchors.py's output.
pub fn load_peers(path: &Path) -> Result<Vec<PeerRow>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let a: Anchors =
        serde_json::from_str(&text).map_err(|e| format!("{} is not anchors.py JSON: {e}", path.display()))?;
    Ok(a.results)
}

fn figure(r: &PeerRow) -> f64 {
    r.tflops.or(r.gbps).unwrap_or(0.0)
}

/// The peers of a tilec row (same kernel and config), best first.
pub fn peers_of<'a>(row: &BenchRow, peers: &'a [PeerRow]) -> Vec<&'a PeerRow> {
    let Some(cfg) = &row.peer_config else { return vec![] };
    let mut v: Vec<&PeerRow> = peers.iter().filter(|p| p.kernel == row.peer_kernel && &p.config == cfg).collect();
    v.sort_by(|a, b| figure(b).total_cmp(&figure(a)));
    v
}

fn tilec_figure(r: &BenchRow) -> f64 {
    r.tflops.unwrap_or(r.gbps)
}

/// Where the numbers came from.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    pub device: String,
    pub driver: String,
    pub date: String,
    pub commit: String,
}

/// The joined markdown table.
pub fn table(rows: &[BenchRow], peers: &[PeerRow], copy_gbps: f64, p: &Provenance) -> String {
    let peer_copy = peers.iter().find(|r| r.kernel == "copy").and_then(|r| r.gbps);
    let mut s = format!(
        "### tilec bench — {}, driver {}, {}, tilec {}\n\ncopy ceiling: {copy_gbps:.0} GB/s (tilec, 512 MiB D2D){}\n\n",
        p.device,
        if p.driver.is_empty() { "?" } else { &p.driver },
        p.date,
        if p.commit.is_empty() { "?" } else { &p.commit },
        peer_copy.map(|g| format!(", {g:.0} GB/s (torch)")).unwrap_or_default()
    );
    s.push_str("| kernel | shape | dtype | median ms | tilec | floor ms | tilec / copy | best peer | peer | tilec / best peer |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let unit = if r.tflops.is_some() { "TFLOP/s" } else { "GB/s" };
        let best = peers_of(r, peers).first().copied();
        s.push_str(&format!(
            "| {} | {} | {} | {:.4} | {:.0} {unit} | {:.4} | {:.2} | {} | {} | {} |\n",
            r.kernel,
            r.shape,
            r.dtype,
            r.median_ms,
            tilec_figure(r),
            r.floor_ms,
            r.gbps / copy_gbps,
            best.map(|b| b.provider.as_str()).unwrap_or("—"),
            best.map(|b| format!("{:.0} {unit}", figure(b))).unwrap_or_else(|| "—".into()),
            best.map(|b| format!("{:.2}", tilec_figure(r) / figure(b))).unwrap_or_else(|| "—".into()),
        ));
    }
    s
}

/// One SVG per kernel class: tilec beside every peer of the same configs, with the copy
/// ceiling for memory-bound classes. Returns the files written.
pub fn plots(
    rows: &[BenchRow],
    peers: &[PeerRow],
    copy_gbps: f64,
    p: &Provenance,
    dir: &Path,
) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let classes: BTreeSet<&str> = rows.iter().map(|r| r.class.as_str()).collect();
    let mut written = vec![];
    for class in classes {
        let rs: Vec<&BenchRow> = rows.iter().filter(|r| r.class == class).collect();
        let mut providers: Vec<String> = vec!["tilec".into()];
        for r in &rs {
            for pr in peers_of(r, peers) {
                if !providers.contains(&pr.provider) {
                    providers.push(pr.provider.clone());
                }
            }
        }
        let compute = rs.iter().any(|r| r.tflops.is_some());
        let unit = if compute { "TFLOP/s" } else { "GB/s" };
        let path = dir.join(format!("{class}.svg"));
        let labels: Vec<String> = rs
            .iter()
            .map(|r| format!("{} {} {}", r.kernel, r.shape.split(' ').next().unwrap_or(""), r.dtype))
            .collect();
        let series: Vec<(String, Vec<Option<f64>>)> = providers
            .iter()
            .enumerate()
            .map(|(j, prov)| {
                let values = rs
                    .iter()
                    .map(|r| {
                        if j == 0 {
                            Some(tilec_figure(r))
                        } else {
                            peers_of(r, peers).iter().find(|p| &p.provider == prov).map(|p| figure(p))
                        }
                    })
                    .collect();
                (prov.clone(), values)
            })
            .collect();
        let line = (!compute).then(|| (copy_gbps, format!("copy {copy_gbps:.0} GB/s")));
        let caption = format!("{class}: {unit} on {} ({})", p.device, p.date);
        grouped_bars(&path, &caption, unit, &labels, &series, line)?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// A bar chart of `series` (name, one value a group) over the groups `labels`, with a
/// horizontal reference line where given: the style of the bench plots, for any figure.
pub fn grouped_bars(
    path: &Path,
    caption: &str,
    unit: &str,
    labels: &[String],
    series: &[(String, Vec<Option<f64>>)],
    line: Option<(f64, String)>,
) -> Result<(), String> {
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().copied())
        .chain(line.as_ref().map(|l| l.0))
        .fold(0.0, f64::max);
    // An empty chart still needs a range.
    let ymax = if ymax > 0.0 && ymax.is_finite() { ymax } else { 1.0 };
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let groups = labels.len();
    let w = (160 + 140 * groups as u32).max(640);
    let root = SVGBackend::new(path, (w, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..groups as f64, 0f64..ymax * 1.45)
        .map_err(|x| e(&x))?;
    let labels2 = labels.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups * 2 + 1)
        .x_label_formatter(&move |x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 1e-6 {
                labels2.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(unit)
        .draw()
        .map_err(|x| e(&x))?;
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(127, 127, 127),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    let bw = 0.8 / series.len().max(1) as f64;
    for (j, (name, values)) in series.iter().enumerate() {
        let color = palette[j % palette.len()];
        let bars = values.iter().enumerate().filter_map(|(i, v)| {
            let x0 = i as f64 + 0.1 + j as f64 * bw;
            v.map(|v| Rectangle::new([(x0, 0.0), (x0 + bw * 0.9, v)], color.filled()))
        });
        chart
            .draw_series(bars)
            .map_err(|x| e(&x))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    if let Some((y, name)) = line {
        chart
            .draw_series(LineSeries::new(vec![(0.0, y), (groups as f64, y)], BLACK.stroke_width(1)))
            .map_err(|x| e(&x))?
            .label(name)
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], BLACK));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_core::DType;

    fn row() -> BenchRow {
        BenchRow {
            kernel: "softmax".into(),
            class: "membound".into(),
            shape: "16384x4096 ROWS=1".into(),
            dtype: DType::F16,
            peer_kernel: "softmax".into(),
            peer_config: Some("M=16384 N=4096 f16".into()),
            median_ms: 0.1,
            min_ms: 0.09,
            gbps: 2684.0,
            tflops: None,
            floor_ms: 0.09,
            copy_gbps: 2900.0,
            rel_l2: 1e-4,
            runs: 100,
            report: vec![],
        }
    }

    fn peers() -> Vec<PeerRow> {
        let p = |prov: &str, g: f64| PeerRow {
            kernel: "softmax".into(),
            provider: prov.into(),
            config: "M=16384 N=4096 f16".into(),
            ms: 0.2,
            tflops: None,
            gbps: Some(g),
        };
        vec![
            p("torch-eager", 1250.0),
            p("torch-compile", 1342.0),
            PeerRow {
                kernel: "copy".into(),
                provider: "torch".into(),
                config: "512 MiB f16".into(),
                ms: 0.3,
                tflops: None,
                gbps: Some(2967.0),
            },
        ]
    }

    #[test]
    fn joins_with_the_best_peer() {
        let t = table(&[row()], &peers(), 2900.0, &Provenance { device: "H100".into(), ..Default::default() });
        assert!(t.contains("| torch-compile | 1342 GB/s | 2.00 |"), "{t}");
        assert!(t.contains("2967 GB/s (torch)"), "{t}");
    }

    #[test]
    fn writes_one_svg_per_class() {
        let dir = std::env::temp_dir().join(format!("tilec-plot-{}", std::process::id()));
        let files = plots(&[row()], &peers(), 2900.0, &Provenance::default(), &dir).unwrap();
        assert_eq!(files.len(), 1);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("torch-compile") && svg.contains("tilec"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
