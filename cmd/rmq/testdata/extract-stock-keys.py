import re,sys
out=[]
for cls,fn in [("BrokerConfig","j4/BrokerConfig.java"),("MessageStoreConfig","j4/MessageStoreConfig.java"),("NettyServerConfig","j4/NettyServerConfig.java"),("NettyClientConfig","j4/NettyClientConfig.java")]:
    src=open(fn).read()
    fields={}
    for m in re.finditer(r'^\s*(?:@\w+\s*)*(?:private|protected|public)\s+(?:volatile\s+)?(?!static)([\w<>\[\]]+)\s+(\w+)\s*(?:=\s*([^;]+))?;',src,re.M):
        fields[m.group(2).lower()]=(m.group(1),(m.group(3) or 'null').strip())
    seen=set()
    for m in re.finditer(r'public\s+void\s+set(\w+)\s*\(\s*(?:final\s+)?([\w.]+)\s+\w+\s*\)',src):
        name,typ=m.group(1),m.group(2)
        if typ not in ('int','long','double','float','boolean','String','Integer','Long','Boolean','Double','Float'): continue
        key=name[0].lower()+name[1:]
        if key in seen: continue
        seen.add(key)
        ft,dv=fields.get(key.lower(),fields.get(('is'+name).lower(),('?','?')))
        dv=re.sub(r'\s+',' ',dv)
        out.append(f"{key}\t{cls}\t{typ}\t{dv}")
for o in out: print(o)
