#!/usr/bin/env python3
"""Whole-process cold compile of every library kernel x target with two tilec binaries,
alternating old/new (and new/old) run by run; the best of REPS a row.

Usage: python3 ab.py OLD_TILEC NEW_TILEC REPS OUT.json
"""
import subprocess,time,re,json,sys,statistics
from pathlib import Path
bins={"old":sys.argv[1],"new":sys.argv[2]}; reps=int(sys.argv[3]); out=sys.argv[4]
root=Path(__file__).resolve().parents[4]
rows=[]
for f in sorted((root / "kernels").glob("*.tile")):
    for m in re.finditer(r"^kernel\s+([A-Za-z_]\w*)", f.read_text(), re.M):
        for a in ["sm_90a","sm_103a","sm_121a"]:
            rows.append((str(f),m.group(1),a))
res=[]
for f,k,a in rows:
    t={b:[] for b in bins}
    for r in range(reps):
        for b,path in (bins.items() if r%2==0 else reversed(list(bins.items()))):
            t0=time.perf_counter(); p=subprocess.run([path,"compile",f,"--kernel",k,"--arch",a,"--no-cache","-o","/dev/null"],capture_output=True); dt=(time.perf_counter()-t0)*1e3
            if p.returncode!=0: t[b]=None; break
            t[b].append(dt)
        if t["old"] is None or t["new"] is None: break
    if t["old"] is None or t["new"] is None: continue
    res.append({"kernel":k,"file":Path(f).name,"target":a,"old_ms":min(t["old"]),"new_ms":min(t["new"])})
    print(k,a,"%.1f -> %.1f"%(min(t["old"]),min(t["new"])),flush=True)
json.dump(res,open(out,"w"),indent=1)
o=[r["old_ms"] for r in res]; n=[r["new_ms"] for r in res]
print("rows",len(res),"median old %.1f new %.1f"%(statistics.median(o),statistics.median(n)),"sum old %.0f new %.0f"%(sum(o),sum(n)))
print("<=50 old",sum(x<=50 for x in o),"new",sum(x<=50 for x in n),"  >300 old",sum(x>300 for x in o),"new",sum(x>300 for x in n))
