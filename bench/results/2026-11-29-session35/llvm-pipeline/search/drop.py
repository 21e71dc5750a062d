import sys,re
# drop.py BASE OUT PASSNAME IDX... : replaces the IDX-th (0-based) occurrences of PASSNAME (function pass) with no-op-function
base,out,name=sys.argv[1:4]; idx=set(int(x) for x in sys.argv[4:])
toks=open(base).read().strip().split(',')
k=0
for i,t in enumerate(toks):
    m=re.match(r'^((?:[\w<>;=-]*\()*)('+re.escape(name)+r'(?:<[^>]*>)?)(\)*)$',t)
    if m:
        if k in idx: toks[i]=m.group(1)+'no-op-function'+m.group(3)
        k+=1
open(out,'w').write(','.join(toks))
print(k,'occurrences',file=sys.stderr)
