package phpjson_test

import (
	"crypto/sha256"
	"fmt"

	"github.com/queuety/queuety-go/internal/phpjson"
)

func ExampleMarshal() {
	payload := phpjson.NewObject()
	payload.Set("url", "https://example.com/feed.xml")
	payload.Set("name", "Café 😀")
	payload.Set("total", 19.5)
	payload.Set("count", 1.0)
	payload.Set("tags", []string{})
	payload.Set("ids", map[string]any{"1": 20, "0": 10})

	b, err := phpjson.Marshal(payload)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	fmt.Printf("%x\n", sha256.Sum256(b))
	// Output:
	// {"url":"https:\/\/example.com\/feed.xml","name":"Caf\u00e9 \ud83d\ude00","total":19.5,"count":1,"tags":[],"ids":[10,20]}
	// 1d5e2325bf28783f924b2bed24e30c2f8f867488b6d2bd960403250de1ef66bd
}

func ExampleDecodeObject() {
	state, err := phpjson.DecodeObject([]byte(`{"order_id":42,"big":9007199254740993,"empty":{}}`))
	if err != nil {
		panic(err)
	}
	state.Set("status", "fetched")
	b, _ := phpjson.Marshal(state)
	fmt.Println(state.Keys())
	fmt.Println(string(b))
	// Output:
	// [order_id big empty status]
	// {"order_id":42,"big":9007199254740993,"empty":[],"status":"fetched"}
}
