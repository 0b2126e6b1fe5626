//! The side-by-side table.

use crate::run::Figures;

/// One row: label, the figure of each run, and whether a ratio makes sense.
struct Row {
    label: String,
    values: Vec<Option<f64>>,
    digits: usize,
}

/// Renders the runs as one Markdown table (figure | each manager | capo / upstream).
pub fn table(runs: &[Figures], credentials: bool) -> String {
    let steady_s = runs.first().map_or(0, |f| f.steady.as_secs());
    let mut rows: Vec<Row> = Vec::new();
    let mut row = |label: &str, digits: usize, f: &dyn Fn(&Figures) -> f64| {
        rows.push(Row {
            label: label.to_owned(),
            values: runs.iter().map(|r| Some(f(r))).collect(),
            digits,
        });
    };
    row("OpenStack requests, create (until all Ready)", 0, &|f| {
        f.os_create.total as f64
    });
    row("  of which writes", 0, &|f| f.os_create.writes as f64);
    row(
        &format!("OpenStack requests per hour, steady ({steady_s} s window, extrapolated)"),
        0,
        &|f| f.per_hour(f.os_steady.total),
    );
    row("  of which writes", 0, &|f| f.per_hour(f.os_steady.writes));
    row("OpenStack requests, delete (until all gone)", 0, &|f| {
        f.os_delete.total as f64
    });
    row("  of which writes", 0, &|f| f.os_delete.writes as f64);
    row("Kubernetes API requests, create (audit log)", 0, &|f| {
        f.kube[0].total as f64
    });
    row("  of which writes", 0, &|f| f.kube[0].writes as f64);
    row(
        "Kubernetes API requests per hour, steady (extrapolated)",
        0,
        &|f| f.per_hour(f.kube[1].total),
    );
    // A 60-s window catches every watch restart or none: the steady rate of each manager's
    // restarts follows its watch timeout (kube-runtime 290 s; client-go random in 5-10 min).
    row("  of which watches started again", 0, &|f| {
        f.per_hour(f.kube[1].watches)
    });
    row("Kubernetes API requests, delete (audit log)", 0, &|f| {
        f.kube[2].total as f64
    });
    row("  of which writes", 0, &|f| f.kube[2].writes as f64);
    row("time to all machines Ready, s", 1, &|f| {
        f.time_to_ready.as_secs_f64()
    });
    row("per-machine time to Ready p50, s", 1, &|f| {
        f.machine_p50.as_secs_f64()
    });
    row("per-machine time to Ready p95, s", 1, &|f| {
        f.machine_p95.as_secs_f64()
    });
    row("time to delete everything, s", 1, &|f| {
        f.delete_time.as_secs_f64()
    });
    row("peak RSS (VmHWM), MiB", 1, &|f| {
        f.peak_rss_kib as f64 / 1024.0
    });
    row("CPU seconds (utime+stime)", 1, &|f| f.cpu_seconds);
    if credentials {
        row("Keystone tokens issued, create", 0, &|f| {
            f.os_create.tokens as f64
        });
        row(
            "Keystone tokens issued per hour, steady (extrapolated)",
            0,
            &|f| f.per_hour(f.os_steady.tokens),
        );
        row(
            "open connections to the cloud, max during create",
            0,
            &|f| f.connections[0] as f64,
        );
        row(
            "open connections to the cloud, max during steady",
            0,
            &|f| f.connections[1] as f64,
        );
    }

    let mut out = String::from("| figure |");
    for r in runs {
        out.push_str(&format!(" {} |", r.kind.name()));
    }
    let ratio = runs.len() == 2;
    if ratio {
        out.push_str(&format!(
            " {} / {} |",
            runs[1].kind.name(),
            runs[0].kind.name()
        ));
    }
    out.push_str("\n|---|");
    for _ in 0..runs.len() + usize::from(ratio) {
        out.push_str("---:|");
    }
    out.push('\n');
    for r in rows {
        out.push_str(&format!("| {} |", r.label));
        for v in &r.values {
            match v {
                Some(v) => out.push_str(&format!(" {v:.*} |", r.digits)),
                None => out.push_str(" – |"),
            }
        }
        if ratio {
            match (r.values[0], r.values[1]) {
                (Some(a), Some(b)) if a > 0.0 => out.push_str(&format!(" {:.2} |", b / a)),
                _ => out.push_str(" – |"),
            }
        }
        out.push('\n');
    }
    out
}
