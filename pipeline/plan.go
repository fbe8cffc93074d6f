package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// PrintPlan 加载配置并打印计划（场景、部署方式、阶段、档位、超时）与每个阶段的时长估算
// （取自产物目录里同一场景的上一次运行；放不下时给出放得下的 max_duration），不运行任何东西。
// 用于在提交矩阵改动前确认它选中了想要的场景与用例。
func PrintPlan(w io.Writer, o Options) error {
	d, err := newDriver(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run type %s, job timeout %v, on_failure %s\n", d.o.RunType, d.tmo.Job, d.m.Defaults.OnFailure)
	for _, p := range d.plans {
		sc := p.Scenario
		target := string(sc.Mode)
		if d.o.BaseURL != "" {
			target = "external " + d.o.BaseURL
		}
		fmt.Fprintf(w, "%s (%s, model %s, quant %s)\n", sc.Name, target, sc.ServedModelName, sc.Quant)
		sel := "all cases"
		if len(p.Functional.Select) > 0 {
			sel = strings.Join(p.Functional.Select, ", ")
		}
		fmt.Fprintf(w, "  functional %-5v timeout %-6v %s\n", p.Functional.Enabled, p.Functional.Timeout, sel)
		var profs []string
		for _, np := range p.Perf.Profiles {
			pr := np.Profile.WithDefaults()
			profs = append(profs, fmt.Sprintf("%s(c=%v in=%v out=%v %s)", np.Name, pr.Concurrency, pr.InputLength, pr.OutputLength, pr.ControlMethod))
		}
		fmt.Fprintf(w, "  perf       %-5v timeout %-6v %s\n", p.Perf.Enabled, p.Perf.Timeout, strings.Join(profs, " "))
		var accs []string
		for _, na := range p.Accuracy.Configs {
			c := na.Config.WithDefaults()
			var ds []string
			for _, x := range c.Datasets {
				ds = append(ds, x.Name)
			}
			extra := ""
			if len(c.ExtraBody) > 0 {
				b, _ := json.Marshal(c.ExtraBody)
				extra = " extra_body=" + string(b)
			}
			accs = append(accs, fmt.Sprintf("%s(%s debug=%v max_tokens=%d%s)", na.Name, strings.Join(ds, ","), c.Debug, c.MaxTokens, extra))
		}
		fmt.Fprintf(w, "  accuracy   %-5v timeout %-6v %s\n", p.Accuracy.Enabled, p.Accuracy.Timeout, strings.Join(accs, " "))
		for _, line := range formatEstimates(d.estimates(&p), d.tmo.Job) {
			fmt.Fprintln(w, line)
		}
	}
	return nil
}
