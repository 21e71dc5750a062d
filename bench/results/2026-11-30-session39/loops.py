import re,sys,subprocess
def loops(cubin):
    out=subprocess.run(["cuobjdump","-sass",cubin],capture_output=True,text=True).stdout
    ins=[]
    for l in out.splitlines():
        m=re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);",l)
        if m: ins.append((int(m.group(1),16),m.group(2)))
    res=[]
    for a,t in ins:
        m=re.search(r"BRA[^0-9]*0x([0-9a-f]+)",t)
        if m:
            tg=int(m.group(1),16)
            if tg<a: res.append((tg,a,sum(1 for x,_ in ins if tg<=x<=a)))
    return len(ins),res
for c in sys.argv[1:]:
    n,r=loops(c); print(c,n,[x[2] for x in r])
