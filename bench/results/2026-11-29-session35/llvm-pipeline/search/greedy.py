import sys,re,subprocess,os,filecmp,time
# greedy.py LEVEL LIST BASEPIPE OUTPIPE LOG
level,listf,basef,outf,logf=sys.argv[1:6]
KEEP={'nvvm-reflect','nvvm-intr-range','lower-expect','lower-constant-intrinsics','verify','annotation2metadata','forceattrs','inferattrs','memprof-remove-attributes','require','invalidate','no-op-function','no-op-module','no-op-loop','no-op-cgscc','transform-warning','annotation-remarks','alloc-token','function-attrs','rpo-function-attrs','post-inline-ee-instrument','ee-instrument'}
toks=open(basef).read().strip().split(',')
def parse(toks):
    stack=[]; info=[]
    for t in toks:
        rest=t; 
        while True:
            m=re.match(r'^([\w-]+(?:<[^>]*>)?)\((.*)$',rest)
            if not m: break
            g=m.group(1).split('<')[0]; stack.append(g); rest=m.group(2)
        m=re.match(r'^(.*?)(\)*)$',rest); name_full=m.group(1); closers=len(m.group(2))
        ctx=stack[-1] if stack else 'module'
        info.append((name_full,ctx,len(t)-len(rest),closers))
        for _ in range(closers): stack.pop()
    return info
NOOP={'module':'no-op-module','function':'no-op-function','cgscc':'no-op-cgscc','devirt':'no-op-cgscc','loop':'no-op-loop','loop-mssa':'no-op-loop'}
jobs=[l.split() for l in open(listf)]
def run(pipe):
    open('/tmp/h/trial','w').write(','.join(pipe))
    env=dict(os.environ); env['TILEC_XPIPE'+level]='/tmp/h/trial'
    os.makedirs('/tmp/pt',exist_ok=True)
    procs=[]; ok=True
    def one(j):
        f,k,a=j; n=f.replace('/','_')+'_'+k+'_'+a
        return subprocess.Popen(['/tmp/tilec.xp','compile',f,'--kernel',k,'--arch',a,'--no-cache','-o','/tmp/pt/'+n+'.ptx'],cwd='/work/main',env=env,stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL),n
    i=0; running=[]
    while i<len(jobs) or running:
        while len(running)<2 and i<len(jobs): running.append(one(jobs[i])); i+=1
        p,n=running.pop(0); rc=p.wait()
        if rc!=0 or not filecmp.cmp('/tmp/pt/'+n+'.ptx','/tmp/p0/'+n+'.ptx',shallow=False):
            ok=False
            for q,_ in running: q.wait()
            return False
    return True
info=parse(toks)
cur=list(toks)
log=open(logf,'a')
assert run(cur), 'base differs'
for i,(name,ctx,plen,cl) in enumerate(info):
    base=name.split('<')[0]
    if base in KEEP or ctx not in NOOP: continue
    trial=list(cur)
    t=cur[i]; trial[i]=t[:plen]+NOOP[ctx]+')'*cl
    t0=time.time(); ok=run(trial)
    print(i,name[:60],ctx,'DROP' if ok else 'keep',round(time.time()-t0,1),file=log,flush=True)
    if ok: cur=trial
    open(outf,'w').write(','.join(cur))
print('done',file=log,flush=True)
