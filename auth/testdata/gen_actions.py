# Regenerates auth/actions_gen.go from an apache/rocketmq clone:
#   cd <rocketmq clone> && python3 <rmq>/auth/testdata/gen_actions.py > <rmq>/auth/actions_gen.go && gofmt -w <rmq>/auth/actions_gen.go
import subprocess, re
T = 'rocketmq-all-5.3.3'
def show(p): return subprocess.run(['git', 'show', T + ':' + p], capture_output=True, text=True).stdout
rc = show('remoting/src/main/java/org/apache/rocketmq/remoting/protocol/RequestCode.java')
codes = dict((m.group(1), int(m.group(2))) for m in re.finditer(r'public static final int (\w+)\s*=\s*(-?\d+);', rc))
files = subprocess.run(['git', 'grep', '-l', '@RocketMQAction', T, '--', 'remoting/src/main/java/org/apache/rocketmq/remoting/protocol/header'], capture_output=True, text=True).stdout.split()
amap = {'PUB': 'ActPub', 'SUB': 'ActSub', 'GET': 'ActGet', 'UPDATE': 'ActUpdate', 'CREATE': 'ActCreate', 'DELETE': 'ActDelete', 'LIST': 'ActList', 'ALL': 'ActAll', 'ANY': 'ActAny'}
tmap = {'TOPIC': 'TypeTopic', 'GROUP': 'TypeGroup', 'CLUSTER': 'TypeCluster', 'NAMESPACE': 'TypeNamespace', 'ANY': 'TypeAny'}
rows = []
for f in files:
    p = f.split(':', 1)[1]; src = show(p)
    a = re.search(r'@RocketMQAction\((.*?)\)\s*\n', src, re.S).group(1)
    code = codes[re.search(r'RequestCode\.(\w+)', a).group(1)]
    res = re.search(r'resource\s*=\s*ResourceType\.(\w+)', a)
    res = res.group(1) if res else ''
    acts = re.findall(r'Action\.(\w+)', a.split('action', 1)[1]) if 'action' in a else []
    fields = []
    for fm in re.finditer(r'@RocketMQResource\((.*?)\)\s*(?:@\w+(?:\([^)]*\))?\s*)*private\s+\w+\s+(\w+)', src, re.S):
        ann, name = fm.group(1), fm.group(2)
        typ = re.search(r'ResourceType\.(\w+)', ann).group(1)
        sp = re.search(r'splitter\s*=\s*(\S+?)\s*$', ann)
        spl = ''
        if sp:
            s = sp.group(1)
            spl = s.strip('"') if s.startswith('"') else re.search(s + r'\s*=\s*"(.*?)"', src).group(1)
        fields.append((typ, name, spl))
    rows.append((code, p.split('/')[-1][:-5], res, acts, fields))
rows.sort()
print('''// Code generated from apache/rocketmq rocketmq-all-5.3.3 (remoting/src/main/java/org/apache/rocketmq/remoting/protocol/header/**:
// every class annotated @RocketMQAction, its value as RequestCode numbers it, its resource and actions, and its own
// fields annotated @RocketMQResource with their splitters). DO NOT EDIT by hand; regenerate with the script in
// auth/testdata/gen_actions.py against the tag.

package auth

// annotated is what DefaultAuthorizationContextBuilder.buildContextByAnnotation reads, per request code.
var annotated = map[int32]annotation{''')
for code, cls, res, acts, fields in rows:
    fs = ', '.join('{%s, "%s", "%s"}' % (tmap[t], n, s) for t, n, s in fields)
    print('\t%d: {header: "%s", cluster: %s, actions: []string{%s}, fields: []resourceField{%s}},' % (code, cls, 'true' if res == 'CLUSTER' else 'false', ', '.join(amap[x] for x in acts), fs))
print('}')
