package emulator

import "github.com/vllm-cibench/cibench/deploy"

// ModeName 是进程内模拟器在场景 YAML 中的 mode 取值，也是它配置块的键。
const ModeName = "emulator"

// Plan 是 emulator 方式对一个场景校验后的结果：场景配置块解码出的 Config（模型名已缺省为
// served_model_name）。运行时 Deployer 填上密钥后构造模拟器。测试与团队的工具可以用类型断言
// 从 matrix.Scenario.Deploy 取回它，改几个时延后自己构造一个模拟器。
type Plan struct {
	// Config 是场景的模拟器配置（不含密钥）。
	Config Config
}

// Deployer 用运行时的密钥构造模拟器（此时不监听端口，Deploy 才监听）。
func (p *Plan) Deployer(rt deploy.Runtime) (deploy.Deployer, error) {
	cfg := p.Config
	cfg.APIKey = rt.APIKey
	return New(cfg)
}

// Mode 返回 emulator 部署方式的登记项：配置块 emulator: 是 Config（时延、能力开关、故障注入；
// 缺省时全部取默认值），model 缺省为场景的 served_model_name，写了不同的值是错误；addr 不可配置
// （总是 127.0.0.1:0）；base_url 不适用。取值由 New 的校验检查，错误定位到块。
// 登记到 deploy.Modes 上：reg.Register(emulator.Mode())。
func Mode() deploy.Mode {
	return deploy.Mode{Name: ModeName, Emulated: true, Prepare: func(b deploy.Block, sc deploy.Scenario) (deploy.Plan, error) {
		var cfg Config
		if err := b.Decode(&cfg); err != nil {
			return nil, err
		}
		// 密钥字段不来自 YAML（Config.APIKey 是 yaml:"-"），健康参数模拟器不需要。
		if err := sc.Inherit(b, deploy.Inherited{ModelField: "model", Model: &cfg.Model}); err != nil {
			return nil, err
		}
		if cfg.Addr != "" {
			return nil, b.Errorf("addr", cfg.Addr, "the emulator scenario always listens on 127.0.0.1:0; addr is not configurable here")
		}
		if sc.BaseURL != "" {
			return nil, b.Errorf("", sc.BaseURL, "base_url is not used with mode emulator (it listens on 127.0.0.1:0)")
		}
		if _, err := New(cfg); err != nil {
			return nil, b.Errorf("", "", "%v", err)
		}
		return &Plan{Config: cfg}, nil
	}}
}
