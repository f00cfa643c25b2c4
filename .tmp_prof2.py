import json,sys,collections
p=json.load(open(sys.argv[1]))
nodes={n['id']:n for n in p['nodes']}
parent={}
for n in p['nodes']:
    for c in n.get('children',[]): parent[c]=n['id']
self_t=collections.Counter()
for s,d in zip(p['samples'],p['timeDeltas']): self_t[s]+=d
agg=collections.Counter()
for nid,t in self_t.items():
    cf=nodes[nid]['callFrame']; agg[cf['url'].split('/')[-1] or cf['functionName']]+=t
for k,v in agg.most_common(12): print(round(v/1000),'ms',k)
# inclusive time for named functions
incl=collections.Counter()
for nid,t in self_t.items():
    seen=set(); x=nid
    while x is not None:
        cf=nodes[x]['callFrame']; key=(cf['functionName'],cf['url'].split('/')[-1])
        if key not in seen: incl[key]+=t; seen.add(key)
        x=parent.get(x)
for k in [('transpileBytes','index.js'),('instrument','instrument.ts'),('poolMemory','pooled_memory.ts'),('transpileComponent','transpile.ts'),('makeRecyclable','recycle.ts'),('linkThroughTable','table_link.ts')]:
    print(k, round(incl[k]/1000))
for k,v in incl.most_common(40):
    if k[1].endswith('.ts'): print(round(v/1000),k)
