import json,sys,glob,collections
f=sys.argv[1]
p=json.load(open(f))
nodes={n['id']:n for n in p['nodes']}
self_t=collections.Counter()
dt=p['timeDeltas']; samples=p['samples']
for s,d in zip(samples,dt): self_t[s]+=d
# aggregate by function+url
agg=collections.Counter()
for nid,t in self_t.items():
    cf=nodes[nid]['callFrame']; agg[(cf['functionName'],cf['url'].split('/')[-1],cf.get('lineNumber'))]+=t
for k,v in agg.most_common(25): print(round(v/1000),'ms',k)
