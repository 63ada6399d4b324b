"""The explore page's style sheet (inline in the page: it loads nothing)."""

CSS = """
:root { --ink:#1f2633; --muted:#667085; --line:#d9dee8; --bg:#f6f7fb; --card:#fff; --accent:#3b6fd8;
        --good:#1e8a4c; --goodbg:#e3f5ea; --bad:#b42318; --badbg:#fdecea; --warn:#9a6700; --warnbg:#fff4d6; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
       color:var(--ink); background:var(--bg); }
main { max-width:1280px; margin:0 auto; padding:24px 28px 60px; }
h1 { font-size:22px; margin:0 0 4px; } h2 { font-size:17px; margin:34px 0 10px; }
h3 { font-size:14px; margin:0; }
.sub { color:var(--muted); margin:0 0 18px; }
.cards { display:flex; flex-wrap:wrap; gap:12px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 16px; min-width:170px; }
.card .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card .v { font-size:20px; font-weight:600; margin-top:2px; }
.card .d { color:var(--muted); font-size:12px; }
.panel { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 16px; overflow:auto; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; color:var(--muted); font-weight:600; text-transform:uppercase; letter-spacing:.03em; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tr:last-child td { border-bottom:none; }
code, .mono { font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
.bar { height:8px; background:#c9d6f3; border-radius:4px; min-width:2px; }
.pill { display:inline-block; padding:0 7px; border-radius:9px; font-size:12px; background:#eef1f6; margin:1px 2px 1px 0; }
.pill.rule { background:#efe9fb; color:#5b3ea8; }
.ok { color:var(--good); } .no { color:var(--bad); }
.chosen { background:var(--goodbg); font-weight:600; }
.illegal { color:#98a2b3; }
.tag { font-size:11px; padding:1px 6px; border-radius:8px; margin-left:6px; vertical-align:1px; }
.tag.bwd { background:#ffe9d6; color:#9a4a00; } .tag.orig { background:#eef1f6; color:var(--muted); }
.tag.warn { background:var(--warnbg); color:var(--warn); } .tag.err { background:var(--badbg); color:var(--bad); }
.choice { margin:0 0 14px; }
.choice .head { display:flex; align-items:baseline; gap:10px; margin-bottom:6px; flex-wrap:wrap; }
.choice .where { color:var(--muted); font-size:12px; margin-top:6px; }
.graphs { display:grid; grid-template-columns:1fr; gap:14px; align-items:start; }
.drawing { text-align:center; }
svg.graph, svg.chart { max-width:100%; height:auto; }
.growth { display:flex; flex-wrap:wrap; gap:18px; align-items:flex-start; }
.growth .plot { flex:2 1 560px; min-width:0; }
.growth .side { flex:1 1 340px; min-width:300px; max-height:300px; overflow:auto; }
.legend span { display:inline-flex; align-items:center; gap:5px; margin-right:14px; color:var(--muted); font-size:12px; }
.sw { width:14px; height:14px; border-radius:4px; display:inline-block; border:1.5px solid #98a2b3; }
details summary { cursor:pointer; color:var(--accent); margin:8px 0; }
.note { color:var(--muted); font-size:12px; margin:6px 0 0; }
.conv td.why { color:var(--muted); font-size:12px; }
.conv .cell-why { display:block; color:var(--muted); font-size:11px; font-weight:400; white-space:normal; max-width:260px; }
svg text { font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif; }
"""
